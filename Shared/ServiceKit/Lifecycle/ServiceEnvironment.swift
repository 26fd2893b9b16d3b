// What `main` sets up once per process and hands to `buildApplication`.

package import Logging
package import Metrics
package import Prometheus

/// The process-wide logger and metrics of a service. Tests build their own with `testing()`.
package struct ServiceEnvironment: Sendable {
    package var logger: Logger
    package var metricsRegistry: PrometheusCollectorRegistry
    package var metricsFactory: any MetricsFactory

    package init(logger: Logger, metricsRegistry: PrometheusCollectorRegistry, metricsFactory: any MetricsFactory) {
        self.logger = logger
        self.metricsRegistry = metricsRegistry
        self.metricsFactory = metricsFactory
    }

    /// A private registry and factory, and the given logger (default: a logger that discards everything).
    package static func testing(
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) -> ServiceEnvironment {
        let registry = PrometheusCollectorRegistry()
        return ServiceEnvironment(
            logger: logger,
            metricsRegistry: registry,
            metricsFactory: PrometheusMetricsFactory(registry: registry)
        )
    }
}
