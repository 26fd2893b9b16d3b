// The middleware stack and the routes every service router starts with.

package import Hummingbird
package import Logging
package import Metrics

extension Router {
    /// Adds, outermost first: request id, request log and metrics, the error boundary, the body-size limit.
    /// The order matters: the log and metrics see the final status of every request, including errors, and
    /// the error boundary also catches the 413 of the size limit.
    package func addStandardMiddleware(maxBodyBytes: Int, metricsFactory: any MetricsFactory) {
        self.add(middleware: RequestIDMiddleware())
        self.add(middleware: RequestObservabilityMiddleware(factory: metricsFactory))
        self.add(middleware: ErrorMiddleware())
        self.add(middleware: BodySizeLimitMiddleware(maxBytes: maxBodyBytes))
    }
}

extension Router where Context == ServiceRequestContext {
    /// A listener's router: the standard middleware, `/health/live` and `/health/ready` (with `checks`), and
    /// `/metrics` from the process's registry.
    package static func service(maxBodyBytes: Int, checks: [any ReadinessCheck], environment: ServiceEnvironment) -> Router {
        let router = Router(context: ServiceRequestContext.self)
        router.addStandardMiddleware(maxBodyBytes: maxBodyBytes, metricsFactory: environment.metricsFactory)
        HealthController(checks: checks).addRoutes(to: router)
        MetricsController(registry: environment.metricsRegistry).addRoutes(to: router)
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
