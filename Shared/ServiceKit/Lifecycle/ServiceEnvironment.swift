// What `main` sets up once per process and hands to `buildApplication`.

package import Logging
package import Metrics
package import Prometheus

/// The process-wide logger and metrics of a service. Tests build their own with `testing()`.
package struct ServiceEnvironment: Sendable {
    package var logger: Logger
    package var metricsRegistry: PrometheusCollectorRegistry
    package var metricsFactory: any MetricsFactory
    /// How long after a request's arrival its database work and its calls to peers may run (`DatabasePool.deadline`);
    /// nil: no deadline.
    package var databaseDeadline: Duration?

    /// A request's database work ends 20 s after its arrival, below the gateway's 30 s `proxy_read_timeout`.
    package static let defaultDatabaseDeadline: Duration = .seconds(20)

    package init(
        logger: Logger,
        metricsRegistry: PrometheusCollectorRegistry,
        metricsFactory: any MetricsFactory,
        databaseDeadline: Duration? = Self.defaultDatabaseDeadline
    ) {
        self.logger = logger
        self.metricsRegistry = metricsRegistry
        self.metricsFactory = metricsFactory
        self.databaseDeadline = databaseDeadline
    }

    /// A private registry and factory, and the given logger (default: a logger that discards everything). No database
    /// deadline: the whole suite on two cores can keep a request's work waiting longer than a deployment ever should.
    package static func testing(
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) -> ServiceEnvironment {
        let registry = PrometheusCollectorRegistry()
        return ServiceEnvironment(
            logger: logger,
            metricsRegistry: registry,
            metricsFactory: PrometheusMetricsFactory(registry: registry),
            databaseDeadline: nil
        )
    }
}
