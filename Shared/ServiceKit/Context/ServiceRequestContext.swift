// The request contexts of the services: Hummingbird's core storage plus the connection's channel.

package import Hummingbird
package import NIOCore

/// A request context that can reach the connection it came on (for the TLS client certificate).
package protocol ChannelRequestContext: RequestContext {
    var channel: any Channel { get }
}

/// What every service's request context is: built by Hummingbird's application from the connection, with the
/// channel at hand. Routers of the kit (`Router.service`) work with any of them.
package protocol ServiceContext: ChannelRequestContext where Source == ApplicationRequestContextSource {}

/// The request context of listeners whose routes need no caller identity.
package struct ServiceRequestContext: ServiceContext {
    package var coreContext: CoreRequestContextStorage
    package let channel: any Channel
    /// When the request's head was read: the start of the time the service spends on it, middleware included.
    package let receivedAt: ContinuousClock.Instant

    package init(source: ApplicationRequestContextSource) {
        self.receivedAt = .now
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }

    /// A backstop only: `BodySizeLimitMiddleware` enforces the configured, smaller limit while the body streams in.
    package var maxUploadSize: Int { ServiceContextLimits.maxUploadSize }
}

/// Limits shared by every service context.
package enum ServiceContextLimits {
    /// The most any route collects: `BodySizeLimitMiddleware` enforces each listener's smaller limit.
    package static let maxUploadSize = 64 * 1024 * 1024
}

/// A request context that carries who the caller is, once an authentication middleware has established it.
package struct IdentifiedRequestContext<Identity: Sendable>: ServiceContext {
    package var coreContext: CoreRequestContextStorage
    package let channel: any Channel
    /// Set by the listener's authentication middleware; `nil` before it ran or when it found no identity.
    package var identity: Identity?

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
        self.identity = nil
    }

    package var maxUploadSize: Int { ServiceContextLimits.maxUploadSize }
}
