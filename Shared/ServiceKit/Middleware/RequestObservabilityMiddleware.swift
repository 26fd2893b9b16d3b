// One log line and RED metrics per request, without headers, bodies, query strings or client addresses.

package import Hummingbird
import Logging
package import Metrics
import NIOCore

/// Logs `method`, the matched route template (never the raw path), status and duration, and records
/// `http_server_requests_total` and `http_server_request_duration_seconds` with the injected metrics factory,
/// and `http_server_active_requests` (by method: the route is known only after routing) while a request runs,
/// which is what shows a drain at shutdown.
/// Probe and scrape routes (`/health/*`, `/metrics`) log at debug so they do not drown the log.
package struct RequestObservabilityMiddleware<Context: RequestContext>: RouterMiddleware {
    private let factory: any MetricsFactory

    package init(factory: any MetricsFactory) {
        self.factory = factory
    }

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        let start = ContinuousClock.now
        var status = 500
        let active = Meter(
            label: "http_server_active_requests",
            dimensions: [("method", request.method.rawValue)],
            factory: self.factory
        )
        active.increment()
        defer {
            active.decrement()
            let elapsed = ContinuousClock.now - start
            let route = context.endpointPath ?? "unmatched"
            self.record(
                method: request.method.rawValue,
                route: route,
                status: status,
                elapsed: elapsed,
                logger: context.logger
            )
        }
        let response = try await next(request, context)
        status = response.status.code
        return response
    }

    private func record(method: String, route: String, status: Int, elapsed: Duration, logger: Logger) {
        let nanoseconds = TimeAmount(elapsed).nanoseconds
        let quiet = route.hasPrefix("/health") || route == "/metrics"
        logger.log(
            level: quiet ? .debug : .info,
            "Request",
            metadata: [
                "http.request.method": "\(method)",
                "http.route": "\(route)",
                "http.response.status_code": "\(status)",
                "duration_ms": "\(Double(nanoseconds / 100_000) / 10)",
            ]
        )
        Counter(
            label: "http_server_requests_total",
            dimensions: [("method", method), ("route", route), ("status", "\(status)")],
            factory: self.factory
        ).increment()
        Metrics.Timer(
            label: "http_server_request_duration_seconds",
            dimensions: [("method", method), ("route", route)],
            preferredDisplayUnit: .seconds,
            factory: self.factory
        ).recordNanoseconds(nanoseconds)
    }
}
