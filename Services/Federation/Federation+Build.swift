// Assembly of federation-service: the runs, and in `serve` mode the callback listener with health and metrics.

import Crypto
import ENFederation
import ENPersistence
import ENServiceKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

extension Federation {
    static func makeDependencies(configuration: FederationConfiguration, logger: Logger) -> FederationDependencies {
        .live(configuration: configuration, logger: logger)
    }

    /// `serve`: the callback (when `EFGS_CALLBACK_CERT_CN` is set), health and metrics; the runs as periodic tasks
    /// unless `FEDERATION_CALLBACK_ONLY` is set.
    static func buildApplication(
        configuration: FederationConfiguration,
        dependencies: FederationDependencies,
        environment: ServiceEnvironment
    ) throws -> ServiceApplication<CertificateRequestContext> {
        let upload = try self.uploadRun(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        )
        let download = self.downloadRun(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        )
        let registration = CallbackRegistrationTask(
            url: configuration.callback.url,
            gateway: dependencies.gateway,
            logger: environment.logger
        )
        let uploads = PeriodicTask(
            name: "federation.upload",
            interval: configuration.uploadInterval,
            logger: environment.logger
        ) {
            _ = try await upload.run()
        }
        let downloads = PeriodicTask(
            name: "federation.download",
            logger: environment.logger,
            pause: { await dependencies.trigger.wait(atMost: configuration.downloadInterval) },
            work: {
                try await registration.ensureRegistered()
                _ = try await download.run()
            }
        )
        let router = try self.buildRouter(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        )
        self.recordCertificateExpiry(configuration, factory: environment.metricsFactory)
        let server = try HTTPServerBuilder.http1(tls: configuration.callback.tls)
        return Application(
            router: router,
            server: server,
            configuration: .init(listening: configuration.http),
            services: dependencies.services + (configuration.callbackOnly ? [] : [uploads, downloads]),
            logger: environment.logger.listener("app")
        )
    }

    /// The routes of `serve`: health, metrics, the OpenAPI document, and the callback behind the client certificate
    /// check when `EFGS_CALLBACK_CERT_CN` is set.
    static func buildRouter(
        configuration: FederationConfiguration,
        dependencies: FederationDependencies,
        environment: ServiceEnvironment
    ) throws -> Router<CertificateRequestContext> {
        let router = Router<CertificateRequestContext>.service(
            maxBodyBytes: 1024,
            checks: dependencies.readinessChecks,
            environment: environment
        )
        try DocumentController.openAPI(in: Bundle.module).addRoutes(to: router)
        if let commonName = configuration.callback.commonName {
            let group = router.group()
            if let gateway = configuration.callback.gateway {
                group.add(
                    middleware: ClientCertificateMiddleware(
                        admission: .commonName(commonName),
                        source: .gateway(header: gateway.header, secret: gateway.secret, roots: gateway.roots)
                    )
                )
            } else {
                group.add(middleware: ClientCertificateMiddleware(admission: .commonName(commonName)))
            }
            CallbackController(
                store: dependencies.store,
                trigger: dependencies.trigger,
                metrics: FederationMetrics(factory: environment.metricsFactory),
                clock: dependencies.clock,
                retentionDays: configuration.download.retentionDays
            )
            .addRoutes(to: group)
        }
        return router
    }

    @Sendable
    static func uploadOnce(
        configuration: FederationConfiguration,
        dependencies: FederationDependencies,
        environment: ServiceEnvironment
    ) async throws {
        try self.refuseCallbackOnly(configuration)
        _ = try await self.uploadRun(configuration: configuration, dependencies: dependencies, environment: environment)
            .run()
    }

    /// `upload` and `download` need the gateway's credentials, which a callback-only configuration does not load.
    static func refuseCallbackOnly(_ configuration: FederationConfiguration) throws {
        if configuration.callbackOnly {
            throw GatewayProtocolError("FEDERATION_CALLBACK_ONLY is set: this configuration only takes callbacks")
        }
    }

    @Sendable
    static func downloadOnce(
        configuration: FederationConfiguration,
        dependencies: FederationDependencies,
        environment: ServiceEnvironment
    ) async throws {
        try self.refuseCallbackOnly(configuration)
        try await CallbackRegistrationTask(
            url: configuration.callback.url,
            gateway: dependencies.gateway,
            logger: environment.logger
        ).ensureRegistered()
        _ = try await self.downloadRun(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        ).run()
    }

    static func uploadRun(
        configuration: FederationConfiguration,
        dependencies: FederationDependencies,
        environment: ServiceEnvironment
    ) throws -> UploadRun {
        guard let signer = configuration.signer else { throw GatewayProtocolError("no batch signer configured") }
        return UploadRun(
            store: dependencies.store,
            gateway: dependencies.gateway,
            signer: signer,
            policy: configuration.upload,
            clock: dependencies.clock,
            metrics: FederationMetrics(factory: environment.metricsFactory),
            logger: environment.logger
        )
    }

    static func downloadRun(
        configuration: FederationConfiguration,
        dependencies: FederationDependencies,
        environment: ServiceEnvironment
    ) -> DownloadRun {
        DownloadRun(
            store: dependencies.store,
            keys: dependencies.keys,
            gateway: dependencies.gateway,
            acceptance: configuration.acceptance,
            verification: BatchVerification(
                verifier: BatchSignatureVerifier(anchors: configuration.batchTrustAnchors),
                ownCountry: configuration.ownCountry
            ),
            policy: configuration.download,
            clock: dependencies.clock,
            metrics: FederationMetrics(factory: environment.metricsFactory),
            logger: environment.logger
        )
    }
}

/// Registers the callback URL with the gateway when it is missing or different (cwa-server §5.5): the id is the hex
/// MD5 of the URL, as in the reference, so every replica registers the same id.
final class CallbackRegistrationTask: Sendable {
    private let url: String?
    private let gateway: any FederationGateway
    private let logger: Logger
    private let done = Mutex(false)

    init(url: String?, gateway: any FederationGateway, logger: Logger) {
        self.url = url
        self.gateway = gateway
        self.logger = logger
    }

    static func id(of url: String) -> String {
        Insecure.MD5.hash(data: Data(url.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Registers once per process; a failure is logged and tried again next time.
    func ensureRegistered() async throws {
        guard let url = self.url, !self.done.withLock({ $0 }) else { return }
        let id = Self.id(of: url)
        do {
            let registered = try await self.gateway.callbacks()
            if !registered.contains(where: { $0.callbackId == id && $0.url == url }) {
                try await self.gateway.registerCallback(id: id, url: url)
                self.logger.info("Callback registered with the gateway", metadata: ["callback.id": "\(id)"])
            }
            self.done.withLock { $0 = true }
        } catch let error as GatewayUnavailable where error.forbidden {
            throw error
        } catch {
            self.logger.error(
                "Callback registration failed; tried again at the next run",
                metadata: ["error": "\(error)"]
            )
        }
    }
}

extension Federation {
    /// `en_certificate_expiry_timestamp_seconds` of what `serve` loaded: the client certificate and the gateway's CA
    /// (`EFGS_CLIENT_CERT_FILE`, `EFGS_CA_FILE`), the batch-signing certificate, the trust anchors, and the callback's
    /// CA or TLS certificate. With `FEDERATION_CALLBACK_ONLY` only the callback's are loaded.
    static func recordCertificateExpiry(_ configuration: FederationConfiguration, factory: any MetricsFactory) {
        CertificateExpiry.record(configuration.gatewayIdentity.certificates, as: "federation-client", factory: factory)
        CertificateExpiry.record(
            configuration.gatewayIdentity.authorities,
            as: "federation-gateway-ca",
            factory: factory
        )
        CertificateExpiry.record(
            configuration.signer.map { [$0.certificate] } ?? [],
            as: "federation-signing",
            factory: factory
        )
        CertificateExpiry.record(configuration.trustAnchors, as: "federation-trust-anchors", factory: factory)
        if let gateway = configuration.callback.gateway {
            CertificateExpiry.record(gateway.roots, as: "federation-callback-ca", factory: factory)
        }
        if let tls = configuration.callback.tls {
            CertificateExpiry.record(tls.certificateChain, as: "federation-callback-tls", factory: factory)
            CertificateExpiry.record(tls.clientCertificateAuthorities, as: "federation-callback-ca", factory: factory)
        }
    }
}
