// The middleware stack and the routes every service router starts with.

import ENPersistence
package import HTTPTypes
package import Hummingbird
package import Logging
package import Metrics

extension Router {
    /// Adds, outermost first: request id, request log and metrics, fixed response headers (when given), the
    /// error boundary, the database deadline, the body-size limit. The order matters: the log and metrics see the
    /// final status of every request, including errors; the fixed headers are set on error answers too; and the error
    /// boundary also catches the 413 of the size limit and turns a passed deadline into a 503.
    package func addStandardMiddleware(
        maxBodyBytes: Int,
        metricsFactory: any MetricsFactory,
        responseHeaders: HTTPFields = [:],
        databaseDeadline: Duration? = ServiceEnvironment.defaultDatabaseDeadline
    ) {
        self.add(middleware: RequestIDMiddleware())
        self.add(middleware: RequestObservabilityMiddleware(factory: metricsFactory))
        if !responseHeaders.isEmpty {
            self.add(middleware: ResponseHeadersMiddleware(headers: responseHeaders))
        }
        self.add(middleware: ErrorMiddleware(metrics: metricsFactory))
        if let databaseDeadline {
            self.add(middleware: DatabaseDeadlineMiddleware(deadline: databaseDeadline))
        }
        self.add(middleware: BodySizeLimitMiddleware(maxBytes: maxBodyBytes))
    }
}

extension Router where Context: ServiceContext {
    /// A listener's router: the standard middleware (with `responseHeaders` on every answer), `/health/live` and
    /// `/health/ready` (with `checks`), and `/metrics` from the process's registry (evaluating `checks` first).
    package static func service(
        maxBodyBytes: Int,
        checks: [any ReadinessCheck],
        environment: ServiceEnvironment,
        responseHeaders: HTTPFields = [:]
    ) -> Router {
        let router = Router(context: Context.self)
        router.addStandardMiddleware(
            maxBodyBytes: maxBodyBytes,
            metricsFactory: environment.metricsFactory,
            responseHeaders: responseHeaders,
            databaseDeadline: environment.databaseDeadline
        )
        let readiness = ReadinessProbe(checks: checks, factory: environment.metricsFactory)
        HealthController(probe: readiness).addRoutes(to: router)
        MetricsController(registry: environment.metricsRegistry, readiness: readiness).addRoutes(to: router)
        return router
    }
}

extension Logger {
    /// This logger with `listener=<name>` (`lab`, `app`, `internal`), which tells a service's listeners apart.
    package func listener(_ name: String) -> Logger {
        var logger = self
        logger[metadataKey: "listener"] = "\(name)"
        return logger
    }
}

/// Gives the request's database work and its calls to peer services a deadline (`DatabasePool.deadline`): `deadline`
/// after the request arrived (20 s in a service), so a database or a peer that stops answering gets the client a 503
/// (`Retry-After: 5`) before the gateway's `proxy_read_timeout` (30 s) would answer 504.
struct DatabaseDeadlineMiddleware<Context: RequestContext>: RouterMiddleware {
    let deadline: Duration

    func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        try await DatabasePool.$deadline.withValue(.now + self.deadline) {
            try await next(request, context)
        }
    }
}

/// Sets fixed headers (such as a `Content-Security-Policy`) on every response that passes through it.
struct ResponseHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    let headers: HTTPFields

    func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        var response = try await next(request, context)
        for field in self.headers {
            response.headers[field.name] = field.value
        }
        return response
    }
}
