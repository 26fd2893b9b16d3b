// The listener Prometheus scrapes: `/metrics` and nothing else, on a port of its own.

package import Hummingbird
package import ServiceLifecycle

/// `/metrics` on `METRICS_HOST`:`METRICS_PORT`, so a network policy can let monitoring scrape a service without
/// opening its APIs to it. The main listeners serve `/metrics` too (ARCHITECTURE §2); the gateway routes neither.
package enum MetricsListener {
    /// Reads `METRICS_HOST` (127.0.0.1) and `METRICS_PORT` (`defaultPort`; 0 picks a free port) and checks the port
    /// differs from the service's other listeners.
    package static func address(
        settings: SettingsReader,
        defaultPort: Int,
        otherListeners: [ListenAddress]
    ) -> ListenAddress {
        let address = ListenAddress(
            settings: settings,
            prefix: "METRICS",
            defaultPort: defaultPort,
            purpose: "Prometheus listener (/metrics only)"
        )
        address.requireDistinctPort(
            from: otherListeners,
            settings: settings,
            setting: "METRICS_PORT",
            problem: "must differ from the ports of the service's other listeners"
        )
        return address
    }

    /// The listener, to run as one of the application's services. Anything but `GET /metrics` is 404. Each scrape
    /// evaluates `checks` first, for `en_service_ready`.
    package static func application(
        address: ListenAddress,
        environment: ServiceEnvironment,
        checks: [any ReadinessCheck]
    ) -> any Service {
        Application(
            router: self.router(environment: environment, checks: checks),
            configuration: .init(listening: address),
            logger: environment.logger.listener("metrics")
        )
    }

    /// `GET /metrics` from the process's registry; everything else 404.
    package static func router(
        environment: ServiceEnvironment,
        checks: [any ReadinessCheck]
    ) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: ErrorMiddleware(metrics: environment.metricsFactory))
        let readiness = ReadinessProbe(checks: checks, factory: environment.metricsFactory)
        MetricsController(registry: environment.metricsRegistry, readiness: readiness).addRoutes(to: router)
        return router
    }
}
