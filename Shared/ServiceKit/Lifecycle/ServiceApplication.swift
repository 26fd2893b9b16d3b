// The application type every listener is, and how it is told where to listen.

package import Hummingbird

/// A listener: Hummingbird's application over a router with one of the services' request contexts.
package typealias ServiceApplication<Context: ServiceContext> = Application<RouterResponder<Context>>

extension ApplicationConfiguration {
    /// Listens on `address`, without a `Server` header.
    package init(listening address: ListenAddress) {
        self.init(address: .hostname(address.host, port: address.port), serverName: nil)
    }
}
