// Assembly of data-donation-service: two listeners, their routers, and the retention pass.

import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging

extension DataDonation {
    static func makeDependencies(configuration: DataDonationConfiguration, logger: Logger) -> DataDonationDependencies {
        .live(configuration: configuration, logger: logger)
    }

    /// The app-facing application; the internal listener and the retention pass run as its services, after the
    /// database pool and the DeviceCheck client.
    static func buildApplication(
        configuration: DataDonationConfiguration,
        dependencies: DataDonationDependencies,
        environment: ServiceEnvironment
    ) throws -> ServiceApplication<ServiceRequestContext> {
        let runtime = DataDonationRuntime(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        )
        return TwoListeners(
            publicRouter: try self.buildPublicRouter(runtime),
            internalRouter: try self.buildInternalRouter(runtime),
            basics: configuration.basics,
            listeners: configuration.listeners
        ).application(
            clients: dependencies.services,
            jobs: [self.retention(runtime).periodic(every: configuration.retention.interval)],
            checks: dependencies.readinessChecks,
            environment: environment
        )
    }

    /// The app API under `/version/v1`, plus health, metrics and its OpenAPI document. Tests may pass a controller of
    /// their own (one that records fake delays instead of waiting them).
    static func buildPublicRouter(
        _ runtime: DataDonationRuntime,
        controller: AppController? = nil
    ) throws -> Router<ServiceRequestContext> {
        let router = Router<ServiceRequestContext>.service(
            maxBodyBytes: runtime.configuration.maxBodyBytes,
            checks: runtime.dependencies.readinessChecks,
            environment: runtime.environment
        )
        try DocumentController.openAPI(in: Bundle.module).addRoutes(to: router)
        (controller ?? runtime.appController).addRoutes(to: router.group("version/v1"))
        if let nhs = runtime.configuration.nhs, let signer = nhs.signer {
            let analytics = NHSAnalyticsController(
                analytics: runtime.dependencies.nhsAnalytics,
                merge: try NHSAreaMerge.bundled(),
                eventsEnabled: runtime.configuration.nhsEventsEnabled,
                clock: runtime.dependencies.clock,
                metrics: runtime.environment.metricsFactory
            )
            let submission = router.group("submission")
                .add(middleware: NHSMaintenanceMiddleware(enabled: nhs.maintenance))
                .add(middleware: NHSAPIKeyMiddleware(api: .mobile, verifier: runtime.dependencies.apiKeys))
            // The daily packet is not signed (nhs §2), the events are.
            analytics.addPacketRoute(to: submission)
            analytics.addEventsRoute(
                to: submission.group()
                    .add(middleware: NHSSigningMiddleware(signer: signer, clock: runtime.dependencies.clock))
            )
        }
        return router
    }

    /// The redemption API under `/version/v1`, for authenticated services only.
    static func buildInternalRouter(_ runtime: DataDonationRuntime) throws -> Router<ServiceRequestContext> {
        let router = Router<ServiceRequestContext>.service(
            maxBodyBytes: 4096,
            checks: runtime.dependencies.readinessChecks,
            environment: runtime.environment
        )
        try DocumentController.openAPI(resource: "openapi-internal", in: Bundle.module).addRoutes(to: router)
        InternalController(
            repository: runtime.dependencies.repository,
            clock: runtime.dependencies.clock,
            metrics: runtime.metrics
        ).addRoutes(
            to: router.group("version/v1").add(
                middleware: ServiceAuthenticationMiddleware(
                    verifier: runtime.configuration.callers,
                    routes: InternalController.routes
                )
            )
        )
        return router
    }

    /// The retention pass (cwa-satellites §4.5); skipped when another replica holds the lock.
    static func retention(_ runtime: DataDonationRuntime) -> RetentionPass<DonationRetentionOutcome> {
        RetentionPass(name: "datadonation.retention", logger: runtime.environment.logger) {
            let outcome = try await runtime.dependencies.repository.applyRetention(
                runtime.configuration.retention,
                now: runtime.dependencies.clock.now
            )
            if let outcome { runtime.metrics.recordRetention(outcome) }
            return outcome
        } describe: { outcome in
            Dictionary(uniqueKeysWithValues: outcome.deleted.map { ("\($0.key).deleted", "\($0.value)") })
        }
    }
}

/// What both listeners of one process share.
struct DataDonationRuntime: Sendable {
    let configuration: DataDonationConfiguration
    let dependencies: DataDonationDependencies
    let environment: ServiceEnvironment
    let metrics: DataDonationMetrics
    let engine: DonationEngine
    let delays: [Platform: FakeDelay]

    init(
        configuration: DataDonationConfiguration,
        dependencies: DataDonationDependencies,
        environment: ServiceEnvironment
    ) {
        self.configuration = configuration
        self.dependencies = dependencies
        self.environment = environment
        self.metrics = DataDonationMetrics(factory: environment.metricsFactory)
        self.engine = DonationEngine(
            repository: dependencies.repository,
            android: configuration.android,
            deviceCheck: dependencies.deviceCheck,
            quotas: configuration.quotas,
            lifetimes: configuration.lifetimes,
            androidIDPepper: configuration.androidIDPepper,
            clock: dependencies.clock,
            metrics: self.metrics,
            logger: environment.logger
        )
        self.delays = [.android: FakeDelay(configuration.fakeDelay), .ios: FakeDelay(configuration.fakeDelay)]
    }

    var appController: AppController {
        AppController(engine: self.engine, delays: self.delays, metrics: self.metrics)
    }
}
