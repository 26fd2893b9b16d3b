// Assembly of test-result-service: two listeners, their routers, and the retention job.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging

extension TestResult {
    static func makeDependencies(configuration: TestResultConfiguration, logger: Logger) -> TestResultDependencies {
        .live(configuration: configuration, logger: logger)
    }

    /// The lab-facing application; the internal listener and the retention job run as its services, after the
    /// database pool and before the lab server, so shutdown stops the lab server first and the pool last.
    static func buildApplication(
        configuration: TestResultConfiguration,
        dependencies: TestResultDependencies,
        environment: ServiceEnvironment
    ) throws -> ServiceApplication<CertificateRequestContext> {
        let metrics = TestResultMetrics(factory: environment.metricsFactory)
        let retention = self.retention(
            policy: configuration.retention,
            dependencies: dependencies,
            metrics: metrics,
            logger: environment.logger
        )
        var listeners = TwoListeners(
            publicRouter: try self.buildPublicRouter(
                configuration: configuration,
                dependencies: dependencies,
                environment: environment,
                metrics: metrics
            ),
            internalRouter: self.buildInternalRouter(
                configuration: configuration,
                dependencies: dependencies,
                environment: environment,
                metrics: metrics
            ),
            basics: configuration.basics,
            listeners: configuration.listeners
        )
        listeners.publicServer = try HTTPServerBuilder.http1(tls: configuration.tls)
        listeners.publicName = "lab"
        return listeners.application(
            clients: dependencies.services,
            jobs: [retention.periodic(every: configuration.retention.interval)],
            checks: dependencies.readinessChecks,
            environment: environment
        )
    }

    /// Lab and portal routes under `/api/v1`, plus health, metrics and the OpenAPI document. With lab certificates
    /// (TLS here or at the gateway) the routes know the calling lab.
    static func buildPublicRouter(
        configuration: TestResultConfiguration,
        dependencies: TestResultDependencies,
        environment: ServiceEnvironment,
        metrics: TestResultMetrics
    ) throws -> Router<CertificateRequestContext> {
        let router = Router<CertificateRequestContext>.service(
            maxBodyBytes: configuration.maxBodyBytes,
            checks: dependencies.readinessChecks,
            environment: environment
        )
        try DocumentController.openAPI(in: Bundle.module).addRoutes(to: router)
        let factory = environment.metricsFactory
        if let tls = configuration.tls {
            CertificateExpiry.record(tls.certificateChain, as: "tls", factory: factory)
            CertificateExpiry.record(tls.clientCertificateAuthorities, as: "lab-ca", factory: factory)
        }
        if let gateway = configuration.gateway {
            CertificateExpiry.record(gateway.labCA, as: "lab-ca", factory: factory)
        }
        let api = router.group("api/v1")
        if configuration.tls != nil {
            api.add(middleware: ClientCertificateMiddleware(allowlist: configuration.labCertificateAllowlist))
        } else if let gateway = configuration.gateway {
            api.add(
                middleware: ClientCertificateMiddleware(
                    allowlist: configuration.labCertificateAllowlist,
                    source: .gateway(header: gateway.header, secret: gateway.secret, roots: gateway.labCA)
                )
            )
        }
        if let lab = self.nhsLab(configuration: configuration, dependencies: dependencies, environment: environment) {
            lab.addLabRoutes(
                to: router.group("upload/virology-test")
                    .add(middleware: NHSMaintenanceMiddleware(enabled: configuration.nhs?.maintenance ?? false))
                    .add(middleware: NHSAPIKeyMiddleware(api: .testResultUpload, verifier: dependencies.apiKeys))
            )
        }
        LabController(
            repository: dependencies.repository,
            validator: LabUploadValidator(maxResults: configuration.maxResultsPerUpload),
            clock: dependencies.clock,
            metrics: metrics
        ).addRoutes(to: api)
        return router
    }

    /// The lookup verification-service uses, plus health and metrics.
    static func buildInternalRouter(
        configuration: TestResultConfiguration,
        dependencies: TestResultDependencies,
        environment: ServiceEnvironment,
        metrics: TestResultMetrics
    ) -> Router<ServiceRequestContext> {
        let router = Router<ServiceRequestContext>.service(
            maxBodyBytes: configuration.maxBodyBytes,
            checks: dependencies.readinessChecks,
            environment: environment
        )
        let api = router.group("api/v1").add(
            middleware: ServiceAuthenticationMiddleware(
                verifier: configuration.callers,
                routes: InternalController.routes
            )
        )
        InternalController(repository: dependencies.repository, clock: dependencies.clock, metrics: metrics)
            .addRoutes(to: api)
        self.nhsLab(configuration: configuration, dependencies: dependencies, environment: environment)?
            .addInternalRoutes(to: api.group("nhs"))
        return router
    }

    /// The NHS test path, when it is enabled.
    static func nhsLab(
        configuration: TestResultConfiguration,
        dependencies: TestResultDependencies,
        environment: ServiceEnvironment
    ) -> NHSLabController? {
        guard let pepper = configuration.nhs?.ctaPepper else { return nil }
        return NHSLabController(
            engine: NHSLabEngine(results: dependencies.nhsResults, pepper: pepper, clock: dependencies.clock),
            metrics: environment.metricsFactory
        )
    }

    /// The masking and deletion pass (cwa-satellites §2.4); skipped when another replica holds the lock.
    static func retention(
        policy: RetentionPolicy,
        dependencies: TestResultDependencies,
        metrics: TestResultMetrics,
        logger: Logger
    ) -> RetentionPass<TestResultRetentionOutcome> {
        RetentionPass(name: "testresult.retention", logger: logger) {
            let now = dependencies.clock.now
            let outcome = try await dependencies.repository.applyRetention(
                maskBefore: policy.maskCutoff(now: now),
                deleteBefore: policy.deleteCutoff(now: now),
                now: now
            )
            if var outcome {
                outcome.nhsDeleted = try await dependencies.nhsResults.deleteExpired(now: now)
                metrics.recordRetention(outcome)
                return outcome
            }
            return nil
        } describe: { outcome in
            [
                "results.masked": "\(outcome.masked)", "results.deleted": "\(outcome.deleted)",
                "nhs_results.deleted": "\(outcome.nhsDeleted)",
            ]
        }
    }
}
