// Authentication and per-caller route allowlists on the internal ports.

package import ENCrypto
package import HTTPTypes
package import Hummingbird
import Logging

/// What each caller of an internal port may call: `METHOD /path` entries by caller name. Fixed in code, so the
/// allowlist is reviewed with the routes it guards; which callers exist and their keys are configuration.
package struct ServiceRoutes: Sendable, Equatable {
    package let allowed: [String: Set<String>]

    package init(_ allowed: [String: Set<String>]) {
        self.allowed = allowed
    }

    package var callers: Set<String> { Set(self.allowed.keys) }

    package func permits(caller: String, method: HTTPRequest.Method, path: String) -> Bool {
        self.allowed[caller]?.contains("\(method.rawValue) \(path)") == true
    }
}

extension HTTPField.Name {
    /// The header a calling service's token travels in.
    package static let cwaServiceToken = HTTPField.Name("X-CWA-Service-Token")!
}

/// Admits a request only with a valid service token in `X-CWA-Service-Token` (401 otherwise) from a caller whose
/// allowlist names the request's method and path (403 otherwise). Applied to the API routes of an internal port;
/// health, metrics and the OpenAPI document stay open for probes and scrapers.
package struct ServiceAuthenticationMiddleware<Context: RequestContext>: RouterMiddleware {
    package let verifier: ServiceTokenVerifier
    package let routes: ServiceRoutes
    package let clock: WallClock

    /// - Parameter clock: the time tokens are checked against; the system clock, as the callers sign with it.
    package init(verifier: ServiceTokenVerifier, routes: ServiceRoutes, clock: WallClock = .system) {
        self.verifier = verifier
        self.routes = routes
        self.clock = clock
    }

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        let caller: String
        do {
            guard let token = request.headers[.cwaServiceToken] else { throw ServiceTokenError.missing }
            caller = try self.verifier.verify(token, now: self.clock.now)
        } catch let error as ServiceTokenError {
            context.logger.warning("service call refused", metadata: ["reason": "\(error.description)"])
            throw APIError(.unauthorized, error.description)
        }
        guard self.routes.permits(caller: caller, method: request.method, path: request.uri.path) else {
            context.logger.warning(
                "service call refused",
                metadata: ["caller": "\(caller)", "route": "\(request.method.rawValue) \(request.uri.path)"]
            )
            throw APIError(.forbidden, "\(caller) may not call \(request.method.rawValue) \(request.uri.path)")
        }
        var context = context
        context.logger[metadataKey: "caller"] = "\(caller)"
        return try await next(request, context)
    }
}
