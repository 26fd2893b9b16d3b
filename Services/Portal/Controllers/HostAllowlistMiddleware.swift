// Only the configured Host values, never X-Forwarded-Host (cwa-satellites §3.2), except for probes.

import ENServiceKit
import HTTPTypes
import Hummingbird

/// Refuses (400) requests whose `Host` is not allowed or that carry `X-Forwarded-Host`, so links and redirects can
/// never be pointed at another host. Health checks and metrics come from the orchestrator with other Host values; the
/// OpenAPI document is a fixed file that names no host, read on the service's own port.
struct HostAllowlistMiddleware<Context: RequestContext>: RouterMiddleware {
    let allowed: Set<String>
    static var forwardedHost: HTTPField.Name { HTTPField.Name("X-Forwarded-Host")! }

    func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        let path = request.uri.path
        if path.hasPrefix("/health/") || path == "/metrics" || path == "/openapi.yaml" {
            return try await next(request, context)
        }
        let host = (request.head.authority ?? "").lowercased()
        guard request.headers[Self.forwardedHost] == nil, self.allowed.contains(host) else {
            return Response(
                status: .badRequest,
                headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: .init(string: "Bad Request"))
            )
        }
        return try await next(request, context)
    }
}
