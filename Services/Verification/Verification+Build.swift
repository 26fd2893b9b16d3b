// Assembly of verification-service: two listeners, their routers, and the clean-up job.

import ENServiceKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import ServiceLifecycle

extension Verification {
    typealias App = Application<RouterResponder<ServiceRequestContext>>

    static func buildApplication(
        configuration: VerificationConfiguration,
        environment: ServiceEnvironment
    ) async throws -> App {
        let dependencies = VerificationDependencies.live(configuration: configuration, logger: environment.logger)
        return try self.buildApplication(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        )
    }

    /// The app-facing application; the internal listener and the clean-up run as its services, after the
    /// database pool and the HTTP client, so shutdown stops the app server first and the clients last.
    static func buildApplication(
        configuration: VerificationConfiguration,
        dependencies: VerificationDependencies,
        environment: ServiceEnvironment
    ) throws -> App {
        let parts = Parts(configuration: configuration, dependencies: dependencies, environment: environment)
        let internalApp = Application(
            router: try self.buildInternalRouter(parts),
            configuration: .init(
                address: .hostname(configuration.internalHTTP.host, port: configuration.internalHTTP.port),
                serverName: nil
            ),
            logger: environment.logger.listener("internal")
        )
        let retention = PeriodicTask(
            name: "verification.retention",
            interval: configuration.retention.interval,
            logger: environment.logger
        ) {
            try await self.runRetention(parts)
        }
        return Application(
            router: try self.buildPublicRouter(parts),
            configuration: .init(
                address: .hostname(configuration.http.host, port: configuration.http.port),
                serverName: nil
            ),
            services: dependencies.services + [retention, internalApp],
            logger: environment.logger.listener("app")
        )
    }

    /// What both routers are built from: the configuration, the dependencies and the objects they share.
    struct Parts: Sendable {
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
            self.engine = VerificationEngine(
                store: dependencies.store,
                testResults: dependencies.testResults,
                policy: configuration.policy,
                clock: dependencies.clock,
                metrics: self.metrics,
                logger: environment.logger
            )
            self.delays = FakeDelayEstimator(configuration.fakeDelay)
        }
    }

    /// The app API under `/version/v1`, plus health, metrics and its OpenAPI document.
    static func buildPublicRouter(_ parts: Parts) throws -> Router<ServiceRequestContext> {
        let router = Self.router(parts)
        try DocumentController.openAPI(in: Bundle.module).addRoutes(to: router)
        ExternalController(engine: parts.engine, delays: parts.delays, metrics: parts.metrics).addRoutes(
            to: router.group("version/v1")
        )
        return router
    }

    /// The internal API under `/version/v1`, plus health, metrics and its OpenAPI document.
    static func buildInternalRouter(_ parts: Parts) throws -> Router<ServiceRequestContext> {
        let router = Self.router(parts)
        try DocumentController.openAPI(resource: "openapi-internal", in: Bundle.module).addRoutes(to: router)
        InternalController(
            engine: parts.engine,
            jwt: JWTVerifier(keys: parts.configuration.jwtKeys),
            metrics: parts.metrics
        ).addRoutes(to: router.group("version/v1"))
        return router
    }

    /// One clean-up pass (cwa-satellites §1.6); skipped when another replica holds the lock.
    static func runRetention(_ parts: Parts) async throws {
        let now = parts.dependencies.clock.now
        guard
            let outcome = try await parts.dependencies.store.applyRetention(
                cutoff: now.addingTimeInterval(-parts.configuration.retention.maxAge.timeInterval),
                now: now,
                rateWindowStart: now.addingTimeInterval(-parts.configuration.policy.teleTANRateWindow.timeInterval)
            )
        else {
            parts.environment.logger.debug("Retention skipped: another replica is running it")
            return
        }
        parts.metrics.recordRetention(outcome)
        parts.environment.logger.info(
            "Retention applied",
            metadata: [
                "sessions.deleted": "\(outcome.sessions)", "tans.deleted": "\(outcome.tans)",
                "teletans.deleted": "\(outcome.teleTANs)",
            ]
        )
    }

    private static func router(_ parts: Parts) -> Router<ServiceRequestContext> {
        Router.service(
            maxBodyBytes: parts.configuration.maxBodyBytes,
            checks: parts.dependencies.readinessChecks,
            environment: parts.environment
        )
    }
}
