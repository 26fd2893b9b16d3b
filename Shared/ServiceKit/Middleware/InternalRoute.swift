// The routes of an internal port, each declared once with the services that may call it.

package import HTTPTypes
package import Hummingbird

/// One route of an internal port: where it is and which callers' service tokens admit it. The route is registered
/// from it (`on(_:use:)`), and the allowlist `ServiceAuthenticationMiddleware` checks is built from the same values
/// (`ServiceRoutes(_:)`), so a route and who may call it cannot drift apart.
package struct InternalRoute: Sendable, Hashable, CustomStringConvertible {
    package let method: HTTPRequest.Method
    /// The path of the group it is registered in (`/version/v1`).
    package let group: String
    /// Its path in that group (`tan/verify`).
    package let path: String
    /// The services (service-token issuers) that may call it.
    package let callers: Set<String>

    package init(_ method: HTTPRequest.Method, _ group: String, _ path: String, callers: Set<String>) {
        self.method = method
        self.group = group
        self.path = path
        self.callers = callers
    }

    /// `POST /version/v1/tan/verify`, as the allowlist and the OpenAPI documents name it.
    package var description: String { "\(self.method.rawValue) \(self.group)/\(self.path)" }
}

extension ServiceRoutes {
    /// The allowlist of `routes`: each caller may call every route that names it.
    package init(_ routes: [InternalRoute]) {
        var allowed: [String: Set<String>] = [:]
        for route in routes {
            for caller in route.callers { allowed[caller, default: []].insert(route.description) }
        }
        self.init(allowed)
    }
}

extension RouterMethods {
    /// Registers `route` on this group (whose path is `route.group`), answered by `handler`.
    @discardableResult
    package func on(
        _ route: InternalRoute,
        use handler: @Sendable @escaping (Request, Context) async throws -> some ResponseGenerator
    ) -> Self {
        self.on(RouterPath(route.path), method: route.method, use: handler)
    }
}
