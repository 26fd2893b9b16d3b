// Assembly of verification-service: two listeners, their routers, and the clean-up job.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging

extension Verification {
    static func makeDependencies(configuration: VerificationConfiguration, logger: Logger) -> VerificationDependencies {
        .live(configuration: configuration, logger: logger)
    }

    /// The app-facing application; the internal listener and the clean-up run as its services, after the
    /// database pool and the HTTP client, so shutdown stops the app server first and the clients last.
    static func buildApplication(
        configuration: VerificationConfiguration,
        dependencies: VerificationDependencies,
        environment: ServiceEnvironment
    ) throws -> ServiceApplication<ServiceRequestContext> {
        let runtime = VerificationRuntime(
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

    /// The app API under `/version/v1`, plus health, metrics and its OpenAPI document.
    static func buildPublicRouter(_ runtime: VerificationRuntime) throws -> Router<ServiceRequestContext> {
        let router = Router<ServiceRequestContext>.service(
            maxBodyBytes: runtime.configuration.maxBodyBytes,
            checks: runtime.dependencies.readinessChecks,
            environment: runtime.environment
        )
        try DocumentController.openAPI(in: Bundle.module).addRoutes(to: router)
        runtime.externalController.addRoutes(to: router.group("version/v1"))
        if let nhs = runtime.nhsController, let signer = runtime.configuration.nhs?.signer {
            let keys = runtime.dependencies.apiKeys
            let maintenance = NHSMaintenanceMiddleware<ServiceRequestContext>(
                enabled: runtime.configuration.nhs?.maintenance ?? false
            )
            let mobile = NHSAPIKeyMiddleware<ServiceRequestContext>(api: .mobile, verifier: keys)
            let signing = NHSSigningMiddleware<ServiceRequestContext>(signer: signer, clock: runtime.dependencies.clock)
            nhs.addRoutes(
                to: router.group("virology-test").add(middleware: maintenance).add(middleware: mobile)
                    .add(middleware: signing)
            )
            if let payments = runtime.isolationPaymentController {
                let group = router.group("isolation-payment/ipc-token").add(middleware: maintenance)
                payments.addAppRoutes(to: group.group().add(middleware: mobile).add(middleware: signing))
                payments.addWebsiteRoutes(
                    to: group.group().add(middleware: NHSAPIKeyMiddleware(api: .isolationPayment, verifier: keys))
                )
            }
            runtime.circuitBreakerController?.addRoutes(
                to: router.group("circuit-breaker").add(middleware: maintenance).add(middleware: mobile)
                    .add(middleware: signing)
            )
        }
        return router
    }

    /// The internal API under `/version/v1`, plus health, metrics and its OpenAPI document.
    static func buildInternalRouter(_ runtime: VerificationRuntime) throws -> Router<InternalRequestContext> {
        let router = Router<InternalRequestContext>.service(
            maxBodyBytes: runtime.configuration.maxBodyBytes,
            checks: runtime.dependencies.readinessChecks,
            environment: runtime.environment
        )
        try DocumentController.openAPI(resource: "openapi-internal", in: Bundle.module).addRoutes(to: router)
        let api = router.group("version/v1").add(
            middleware: ServiceAuthenticationMiddleware(
                verifier: runtime.configuration.callers,
                routes: InternalController.routes
            )
        )
        InternalController(
            engine: runtime.engine,
            jwt: JWTVerifier(keys: runtime.configuration.jwtKeys, policy: runtime.configuration.jwtPolicy),
            metrics: runtime.metrics
        ).addRoutes(to: api)
        runtime.nhsController?.addInternalRoutes(to: api)
        runtime.circuitBreakerController?.addInternalRoutes(to: api)
        return router
    }

    /// The clean-up pass (cwa-satellites §1.6); skipped when another replica holds the lock.
    static func retention(_ runtime: VerificationRuntime) -> RetentionPass<VerificationRetentionOutcome> {
        RetentionPass(name: "verification.retention", logger: runtime.environment.logger) {
            let now = runtime.dependencies.clock.now
            let outcome = try await runtime.dependencies.repository.applyRetention(
                cutoff: now.addingTimeInterval(-runtime.configuration.retention.maxAge.timeInterval),
                now: now,
                rateWindowStart: now.addingTimeInterval(-runtime.configuration.policy.teleTANRateWindow.timeInterval),
                redemptionCutoff: now.addingTimeInterval(-runtime.configuration.retention.redemptionRecord.timeInterval)
            )
            guard var outcome else { return nil }
            outcome.nhsOrders = try await runtime.dependencies.nhsOrders.deleteExpired(now: now)
            outcome.nhsIsolationPaymentTokens = try await runtime.dependencies.isolationPayments.deleteExpired(now: now)
            outcome.nhsCircuitBreakerRequests = try await runtime.dependencies.circuitBreakers.deleteExpired(now: now)
            runtime.metrics.recordRetention(outcome)
            return outcome
        } describe: { outcome in
            [
                "sessions.deleted": "\(outcome.sessions)", "tans.deleted": "\(outcome.tans)",
                "teletans.deleted": "\(outcome.teleTANs)", "nhs_orders.deleted": "\(outcome.nhsOrders)",
                "nhs_ipc_tokens.deleted": "\(outcome.nhsIsolationPaymentTokens)",
                "nhs_cb_requests.deleted": "\(outcome.nhsCircuitBreakerRequests)",
            ]
        }
    }
}

/// What both listeners of one process share: the configuration and dependencies, the metrics, the rules engine and
/// the fake-delay estimates of the app endpoints.
struct VerificationRuntime: Sendable {
    let configuration: VerificationConfiguration
    let dependencies: VerificationDependencies
    let environment: ServiceEnvironment
    let metrics: VerificationMetrics
    let engine: VerificationEngine
    let delays: FakeDelayEstimator

    init(
        configuration: VerificationConfiguration,
        dependencies: VerificationDependencies,
        environment: ServiceEnvironment
    ) {
        self.configuration = configuration
        self.dependencies = dependencies
        self.environment = environment
        self.metrics = VerificationMetrics(factory: environment.metricsFactory)
        self.metrics.recordRegistrationCap(configuration.policy.registrationsPerDay)
        self.engine = VerificationEngine(
            repository: dependencies.repository,
            testResults: dependencies.testResults,
            policy: configuration.policy,
            pepper: TeleTANPepper(keys: configuration.teleTANPepper),
            clock: dependencies.clock,
            metrics: self.metrics,
            logger: environment.logger
        )
        self.delays = FakeDelayEstimator(configuration.fakeDelay)
    }

    /// The NHS test path's controller, when it is enabled.
    var nhsController: NHSVirologyController? {
        guard let pepper = self.configuration.nhs?.ctaPepper else { return nil }
        return NHSVirologyController(
            engine: NHSVirologyEngine(
                store: self.dependencies.nhsOrders,
                testResults: self.dependencies.testResults,
                pepper: pepper,
                clock: self.dependencies.clock
            ),
            orderWebsite: self.configuration.nhsOrderWebsite,
            registerWebsite: self.configuration.nhsRegisterWebsite,
            exchangeDuration: self.nhsExchangeDuration,
            metrics: self.environment.metricsFactory
        )
    }

    /// Isolation payment tokens, when NHS is enabled.
    var isolationPaymentController: NHSIsolationPaymentController? {
        guard self.configuration.nhs != nil else { return nil }
        return NHSIsolationPaymentController(
            store: self.dependencies.isolationPayments,
            settings: self.configuration.isolationPayment,
            clock: self.dependencies.clock,
            metrics: self.environment.metricsFactory
        )
    }

    /// Circuit-breaker approvals, when NHS is enabled.
    var circuitBreakerController: NHSCircuitBreakerController? {
        guard self.configuration.nhs != nil else { return nil }
        return NHSCircuitBreakerController(
            store: self.dependencies.circuitBreakers,
            settings: self.configuration.circuitBreaker,
            clock: self.dependencies.clock,
            metrics: self.environment.metricsFactory
        )
    }

    /// One second, as the reference; tests shorten it.
    var nhsExchangeDuration: Duration = .seconds(1)

    /// The app API's controller.
    var externalController: ExternalController {
        ExternalController(engine: self.engine, delays: self.delays, metrics: self.metrics)
    }
}
