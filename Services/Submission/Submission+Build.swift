// Assembly of submission-service: one listener with the app API.

import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging

extension Submission {
    static func makeDependencies(configuration: SubmissionConfiguration, logger: Logger) -> SubmissionDependencies {
        .live(configuration: configuration, logger: logger)
    }

    /// The application; the database pool and the clients of verification-service and data-donation-service run as
    /// its services, so shutdown stops the server first and the clients last.
    static func buildApplication(
        configuration: SubmissionConfiguration,
        dependencies: SubmissionDependencies,
        environment: ServiceEnvironment
    ) throws -> ServiceApplication<ServiceRequestContext> {
        let runtime = SubmissionRuntime(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        )
        return Application(
            router: try self.buildRouter(runtime),
            configuration: .init(listening: configuration.http),
            services: dependencies.services + [
                PeriodicTask(
                    name: "submission.recovery",
                    interval: configuration.recovery.interval,
                    logger: environment.logger
                ) {
                    let outcome = try await runtime.recovery.run()
                    if outcome != SubmissionRecovery.Outcome() {
                        environment.logger.info(
                            "Held submissions resolved",
                            metadata: [
                                "completed": "\(outcome.completed)", "released": "\(outcome.released)",
                                "unconfirmed": "\(outcome.unconfirmed)", "deferred": "\(outcome.deferred)",
                            ]
                        )
                    }
                },
                MetricsListener.application(
                    address: configuration.metrics,
                    environment: environment,
                    checks: dependencies.readinessChecks
                ),
            ],
            logger: environment.logger.listener("app")
        )
    }

    /// The app API under `/version/v1`, plus health, metrics and the OpenAPI document. Every answer carries the
    /// reference's `Content-Security-Policy`. Tests may pass a `controller` of their own (one that records the
    /// fake delays instead of waiting them).
    static func buildRouter(
        _ runtime: SubmissionRuntime,
        controller: SubmissionController? = nil,
        nhsController: NHSSubmissionController? = nil
    ) throws -> Router<ServiceRequestContext> {
        let router = Router<ServiceRequestContext>.service(
            maxBodyBytes: runtime.configuration.maxRequestBytes,
            checks: runtime.dependencies.readinessChecks,
            environment: runtime.environment,
            responseHeaders: [.contentSecurityPolicy: "default-src 'self'"]
        )
        try DocumentController.openAPI(in: Bundle.module).addRoutes(to: router)
        (controller ?? runtime.controller).addRoutes(to: router.group("version/v1"))
        if let nhs = runtime.configuration.nhs, let signer = nhs.signer {
            let keys = runtime.dependencies.apiKeys
            let maintenance = NHSMaintenanceMiddleware<ServiceRequestContext>(enabled: nhs.maintenance)
            (nhsController ?? runtime.nhsController).addRoutes(
                signed: router.group("submission")
                    .add(middleware: maintenance)
                    .add(middleware: NHSAPIKeyMiddleware(api: .mobile, verifier: keys))
                    .add(middleware: NHSSigningMiddleware(signer: signer, clock: runtime.dependencies.clock)),
                open: router.group("submission").add(middleware: maintenance)
            )
        }
        return router
    }
}

/// What the router is built from: the configuration and dependencies, the metrics, the rules engine and the
/// fake-delay estimate of each endpoint.
struct SubmissionRuntime: Sendable {
    let configuration: SubmissionConfiguration
    let dependencies: SubmissionDependencies
    let environment: ServiceEnvironment
    let metrics: SubmissionMetrics
    let engine: SubmissionEngine
    let recovery: SubmissionRecovery
    let delays: [SubmissionEndpoint: FakeDelay]
    let nhsDelay: FakeDelay

    init(configuration: SubmissionConfiguration, dependencies: SubmissionDependencies, environment: ServiceEnvironment)
    {
        self.configuration = configuration
        self.dependencies = dependencies
        self.environment = environment
        self.metrics = SubmissionMetrics(factory: environment.metricsFactory)
        self.recovery = SubmissionRecovery(
            policy: configuration.recovery,
            keys: dependencies.keys,
            verifier: dependencies.verifier,
            selfReports: dependencies.selfReports,
            clock: dependencies.clock,
            metrics: self.metrics,
            logger: environment.logger
        )
        self.engine = SubmissionEngine(
            policy: configuration.policy,
            verifier: dependencies.verifier,
            selfReports: dependencies.selfReports,
            keys: dependencies.keys,
            clock: dependencies.clock,
            metrics: self.metrics,
            logger: environment.logger,
            recovery: self.recovery
        )
        self.nhsDelay = FakeDelay(configuration.fakeDelay)
        self.delays = Dictionary(
            uniqueKeysWithValues: SubmissionEndpoint.allCases.map { ($0, FakeDelay(configuration.fakeDelay)) }
        )
    }

    /// The NHS routes' controller; its dummies draw their delays from real NHS submissions.
    var nhsController: NHSSubmissionController {
        NHSSubmissionController(engine: self.engine, delay: self.nhsDelay, metrics: self.environment.metricsFactory)
    }

    /// The app API's controller.
    var controller: SubmissionController {
        SubmissionController(engine: self.engine, delays: self.delays, metrics: self.metrics)
    }
}
