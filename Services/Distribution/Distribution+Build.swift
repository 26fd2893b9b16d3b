// Assembly of distribution-service: the run, and in `serve` mode the listener with health and metrics.

import ENServiceKit
import Hummingbird
import Logging

extension Distribution {
    static func makeDependencies(configuration: DistributionConfiguration, logger: Logger) -> DistributionDependencies {
        .live(configuration: configuration, logger: logger)
    }

    /// `serve`: health and metrics on the HTTP port; the runs as a periodic task of the application.
    static func buildApplication(
        configuration: DistributionConfiguration,
        dependencies: DistributionDependencies,
        environment: ServiceEnvironment
    ) -> ServiceApplication<ServiceRequestContext> {
        let run = self.distributionRun(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        )
        let task = PeriodicTask(name: "distribution", interval: configuration.interval, logger: environment.logger) {
            try await dependencies.objectStore.check()
            _ = try await run.run()
        }
        let router = Router<ServiceRequestContext>.service(
            maxBodyBytes: 1024,
            checks: dependencies.readinessChecks,
            environment: environment
        )
        return Application(
            router: router,
            configuration: .init(listening: configuration.http),
            services: dependencies.services + [task],
            logger: environment.logger.listener("app")
        )
    }

    /// `run`: one run, failing when the object store cannot take the tree (a missing bucket, as in the reference).
    @Sendable
    static func runOnce(
        configuration: DistributionConfiguration,
        dependencies: DistributionDependencies,
        environment: ServiceEnvironment
    ) async throws {
        try await dependencies.objectStore.check()
        _ = try await self.distributionRun(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        ).run()
    }

    static func distributionRun(
        configuration: DistributionConfiguration,
        dependencies: DistributionDependencies,
        environment: ServiceEnvironment
    ) -> DistributionRun {
        DistributionRun(
            configuration: configuration,
            keys: dependencies.keys,
            store: dependencies.objectStore.store,
            clock: dependencies.clock,
            metrics: DistributionMetrics(factory: environment.metricsFactory),
            logger: environment.logger
        )
    }
}
