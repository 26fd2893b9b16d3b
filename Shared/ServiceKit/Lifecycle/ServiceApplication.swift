// The application type every listener is, and how it is told where to listen.

package import Hummingbird
package import HummingbirdCore
package import ServiceLifecycle

/// A listener: Hummingbird's application over a router with one of the services' request contexts.
package typealias ServiceApplication<Context: ServiceContext> = Application<RouterResponder<Context>>

extension ApplicationConfiguration {
    /// Listens on `address`, without a `Server` header.
    package init(listening address: ListenAddress) {
        self.init(address: .hostname(address.host, port: address.port), serverName: nil)
    }
}

/// The listeners of a service with a public and an internal API.
package struct TwoListeners<Public: ServiceContext, Internal: ServiceContext> {
    package var publicRouter: Router<Public>
    package var publicAddress: ListenAddress
    /// The public listener's server: plain HTTP/1.1, or ending TLS itself (`HTTPServerBuilder.http1(tls:)`).
    package var publicServer: HTTPServerBuilder = .http1()
    /// The name the public listener's log lines carry (`app`, `lab`).
    package var publicName = "app"
    package var internalRouter: Router<Internal>
    package var internalAddress: ListenAddress
    package var metricsAddress: ListenAddress

    /// The listeners of a configuration: the public one of `basics`, the internal and metrics ones of `listeners`.
    package init(
        publicRouter: Router<Public>,
        internalRouter: Router<Internal>,
        basics: ServiceBasics,
        listeners: InternalListeners
    ) {
        self.publicRouter = publicRouter
        self.publicAddress = basics.http
        self.internalRouter = internalRouter
        self.internalAddress = listeners.internalHTTP
        self.metricsAddress = listeners.metrics
    }

    /// The public application. The clients (the database pool, HTTP clients) start first, then `jobs`, the internal
    /// listener and the metrics listener, as its services, so shutdown stops the servers first and the clients last.
    package func application(
        clients: [any Service],
        jobs: [any Service],
        checks: [any ReadinessCheck],
        environment: ServiceEnvironment
    ) -> ServiceApplication<Public> {
        let internalApp = Application(
            router: self.internalRouter,
            configuration: .init(listening: self.internalAddress),
            logger: environment.logger.listener("internal")
        )
        return Application(
            router: self.publicRouter,
            server: self.publicServer,
            configuration: .init(listening: self.publicAddress),
            services: clients + jobs + [
                internalApp,
                MetricsListener.application(address: self.metricsAddress, environment: environment, checks: checks),
            ],
            logger: environment.logger.listener(self.publicName)
        )
    }
}
