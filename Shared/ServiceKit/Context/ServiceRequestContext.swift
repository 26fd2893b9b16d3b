// The request context of every service: Hummingbird's core storage plus the connection's channel.

package import Hummingbird
package import NIOCore

/// A request context that can reach the connection it came on (for the TLS client certificate).
package protocol ChannelRequestContext: RequestContext {
    var channel: any Channel { get }
}

/// The request context shared by the services.
package struct ServiceRequestContext: ChannelRequestContext {
    package var coreContext: CoreRequestContextStorage
    package let channel: any Channel

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }

    /// A backstop only: `BodySizeLimitMiddleware` enforces the configured, smaller limit while the body streams in.
    package var maxUploadSize: Int { 64 * 1024 * 1024 }
}
