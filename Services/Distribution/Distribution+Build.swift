// Assembly of distribution-service: the run, and in `serve` mode the listener with health and metrics.

import ENCrypto
import ENPersistence
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

extension Distribution {
    static func makeDependencies(configuration: DistributionConfiguration, logger: Logger) -> DistributionDependencies {
        .live(configuration: configuration, logger: logger)
    }

    /// `serve`: health and metrics on the HTTP port; the runs as a periodic task of the application.
    static func buildApplication(
        configuration: DistributionConfiguration,
        dependencies: DistributionDependencies,
        environment: ServiceEnvironment
    ) throws -> ServiceApplication<ServiceRequestContext> {
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
        var services = dependencies.services + [task] as [any Service]
        if let nhs = configuration.nhs, let callers = configuration.callers {
            services.append(
                Application(
                    router: try self.buildInternalRouter(
                        publisher: NHSListPublisher(
                            store: dependencies.objectStore.store,
                            signer: nhs.signer,
                            clock: dependencies.clock,
                            metrics: environment.metricsFactory,
                            tierMetadata: nhs.documents.first { $0.name == "tier-metadata" }?.bytes ?? []
                        ),
                        callers: callers,
                        checks: dependencies.readinessChecks,
                        environment: environment
                    ),
                    configuration: .init(listening: configuration.internalHTTP),
                    logger: environment.logger.listener("internal")
                )
            )
        }
        return Application(
            router: router,
            configuration: .init(listening: configuration.http),
            services: services,
            logger: environment.logger.listener("app")
        )
    }

    /// The internal port (serve mode, NHS): the lists portal-service publishes, behind service tokens.
    static func buildInternalRouter(
        publisher: NHSListPublisher,
        callers: ServiceTokenVerifier,
        checks: [any ReadinessCheck],
        environment: ServiceEnvironment
    ) throws -> Router<ServiceRequestContext> {
        let router = Router<ServiceRequestContext>.service(
            maxBodyBytes: 4 * 1_048_576,
            checks: checks,
            environment: environment
        )
        try DocumentController.openAPI(resource: "openapi-internal", in: Bundle.module).addRoutes(to: router)
        publisher.addRoutes(
            to: router.group("version/v1").add(
                middleware: ServiceAuthenticationMiddleware(verifier: callers, routes: NHSListPublisher.routes)
            )
        )
        return router
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

    /// `publish availability [--setting value …]`: the availability documents (the app's kill switch) signed and
    /// written now, without a key run, so a new minimum version reaches the apps at once. Exit 0 when published, 1 when
    /// the store failed, 2 for a bad command line or configuration.
    static func publishAvailability(settings: [String], environment: [String: String]) async -> Int32 {
        let ready: Startup<DistributionConfiguration>.Ready
        switch Self.start(arguments: ["distribution-service"] + settings, environment: environment) {
        case .exit(let code): return code
        case .ready(let value): ready = value
        }
        let logger = ready.environment.logger
        guard let nhs = ready.configuration.nhs else {
            logger.critical("publish availability needs NHS_ENABLED=true and the NHS signing keys")
            return 2
        }
        do {
            let dependencies = Self.makeDependencies(configuration: ready.configuration, logger: logger)
            try await withRunningServices(dependencies.services) {
                try await dependencies.objectStore.check()
                for object in try nhs.objects(names: NHSDocuments.availability, at: dependencies.clock.now) {
                    try await dependencies.objectStore.store.put(object)
                }
            }
            logger.notice("Availability documents published", metadata: ["documents": "\(NHSDocuments.availability)"])
            return 0
        } catch {
            logger.critical("Publishing the availability documents failed", metadata: ErrorMetadata.described(error))
            return 1
        }
    }
}
