// Assembly of portal-service: one listener with the pages, and the session clean-up.

import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdBcrypt
import Logging
import Metrics

extension Portal {
    static func makeDependencies(configuration: PortalConfiguration, logger: Logger) -> PortalDependencies {
        .live(configuration: configuration, logger: logger)
    }

    static func buildApplication(
        configuration: PortalConfiguration,
        dependencies: PortalDependencies,
        environment: ServiceEnvironment
    ) async throws -> ServiceApplication<PortalRequestContext> {
        let engine = self.engine(
            configuration: configuration,
            dependencies: dependencies,
            logger: environment.logger,
            metrics: environment.metricsFactory
        )
        let router = try await self.buildRouter(
            configuration: configuration,
            engine: engine,
            dependencies: dependencies,
            environment: environment
        )
        let clock = dependencies.clock
        let repository = dependencies.repository
        let cleanup = PeriodicTask(name: "session-cleanup", interval: .seconds(300), logger: environment.logger) {
            let now = clock.now
            try await repository.deleteExpiredSessions(
                idleBefore: now.addingTimeInterval(-configuration.policy.sessionIdleTimeout.timeInterval),
                createdBefore: now.addingTimeInterval(-configuration.policy.sessionLifetime.timeInterval)
            )
        }
        // At start and hourly: secrets in clear (rows written before sealing existed) and secrets under a key that
        // is no longer first in TOTP_KEY_FILE are sealed under the current key.
        let sealing = PeriodicTask(name: "totp-sealing", interval: .seconds(3600), logger: environment.logger) {
            _ = try await engine.sealTOTPSecrets()
        }
        return Application(
            router: router,
            configuration: .init(listening: configuration.http),
            services: dependencies.services + [
                cleanup, sealing,
                MetricsListener.application(
                    address: configuration.metrics,
                    environment: environment,
                    checks: dependencies.readinessChecks
                ),
            ],
            logger: environment.logger.listener("app")
        )
    }

    /// The rules over the dependencies.
    static func engine(
        configuration: PortalConfiguration,
        dependencies: PortalDependencies,
        logger: Logger,
        metrics: any MetricsFactory
    ) -> PortalEngine {
        PortalEngine(
            repository: dependencies.repository,
            teleTANs: dependencies.teleTANs,
            signer: configuration.signer,
            totpBox: TOTPSecretBox(keys: configuration.totpKeys),
            policy: configuration.policy,
            authorities: configuration.authorities,
            clock: dependencies.clock,
            logger: logger,
            metrics: PortalMetrics(factory: metrics),
            decoyHash: Bcrypt.hash("decoy-password-for-timing", cost: UInt8(configuration.policy.bcryptCost))
        )
    }

    /// The router: standard middleware with the security headers, the Host allowlist, health, metrics, the pages.
    static func buildRouter(
        configuration: PortalConfiguration,
        engine: PortalEngine,
        dependencies: PortalDependencies,
        environment: ServiceEnvironment
    ) async throws -> Router<PortalRequestContext> {
        let router = Router<PortalRequestContext>.service(
            // With NHS, a local-risk list may be up to 1 MB (base64 on a venue officer's confirmation); the other
            // pages' forms stay small (FormFields reads 16 KB there, and the gateway allows no more).
            maxBodyBytes: configuration.nhsEnabled ? FormFields.maxUploadBytes : FormFields.maxBytes,
            checks: dependencies.readinessChecks,
            environment: environment,
            responseHeaders: [
                .contentSecurityPolicy:
                    "default-src 'self'; script-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
                HTTPField.Name("X-Frame-Options")!: "DENY",
                HTTPField.Name("Referrer-Policy")!: "no-referrer",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ]
        )
        router.add(middleware: HostAllowlistMiddleware(allowed: configuration.allowedHosts))
        let stylesheet =
            try Bundle.module.url(forResource: "portal", withExtension: "css", subdirectory: "Resources/static")
            .map { try String(contentsOf: $0, encoding: .utf8) } ?? ""
        let localRisk =
            configuration.nhsEnabled ? NHSLocalRisk(lists: dependencies.lists, clock: dependencies.clock) : nil
        PortalController(
            engine: engine,
            circuitBreakers: dependencies.circuitBreakers,
            localRisk: localRisk,
            pages: try await Pages.load(),
            secureCookies: configuration.secureCookies,
            stylesheet: stylesheet
        )
        .addRoutes(to: router)
        try DocumentController.openAPI(in: Bundle.module).addRoutes(to: router)
        if let localRisk, let keys = dependencies.apiKeys {
            NHSUploadController(engine: engine, localRisk: localRisk).addRoutes(to: router, keys: keys)
        }
        return router
    }
}
