// Assembly of efgs-gateway: the API, and its passes as services.

import ENPersistence
import ENServiceKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import PostgresNIO
import ServiceLifecycle

struct GatewayDependencies: ServiceDependencies {
    var store: GatewayStore
    var clock: WallClock
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]
}

extension EFGSGateway {
    static func makeDependencies(configuration: GatewayConfiguration, logger: Logger) -> GatewayDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let readiness = configuration.database.makeReadinessClient(logger: logger)
        return GatewayDependencies(
            store: GatewayStore(
                client: client,
                logger: logger,
                integrity: CertificateIntegrity(trustAnchor: configuration.trustAnchor),
                leaseTimeout: configuration.database.leaseTimeout
            ),
            clock: .system,
            services: [client, readiness],
            readinessChecks: [PostgresReadinessCheck(client: readiness)]
        )
    }

    static func buildApplication(
        configuration: GatewayConfiguration,
        dependencies: GatewayDependencies,
        environment: ServiceEnvironment
    ) throws -> ServiceApplication<CountryRequestContext> {
        let metrics = GatewayMetrics(factory: environment.metricsFactory)
        let router = Router<CountryRequestContext>.service(
            maxBodyBytes: configuration.settings.maximumBodyBytes,
            checks: dependencies.readinessChecks,
            environment: environment
        )
        try DocumentController.openAPI(in: Bundle.module).addRoutes(to: router)
        let api = router.group()
        let source: CountryAuthenticationMiddleware.Source =
            if let secret = configuration.frontSecret { .front(secret: secret) } else { .tls }
        api.add(middleware: CountryAuthenticationMiddleware(store: dependencies.store, source: source))
        GatewayController(
            store: dependencies.store,
            settings: configuration.settings,
            clock: dependencies.clock,
            metrics: metrics
        ).addRoutes(to: api)

        let batching = BatchingPass(
            store: dependencies.store,
            settings: configuration.settings,
            clock: dependencies.clock,
            metrics: metrics,
            logger: environment.logger
        )
        let delivery = CallbackDelivery(
            configuration: configuration,
            store: dependencies.store,
            clock: dependencies.clock,
            metrics: metrics,
            logger: environment.logger
        )
        let server = try HTTPServerBuilder.http1(tls: configuration.tls)
        return Application(
            router: router,
            server: server,
            configuration: .init(listening: configuration.http),
            services: dependencies.services + [
                delivery,
                PeriodicTask(name: "efgs.batching", interval: configuration.batchInterval, logger: environment.logger) {
                    try await batching.run()
                },
                PeriodicTask(
                    name: "efgs.callbacks",
                    interval: configuration.callbackInterval,
                    logger: environment.logger
                ) {
                    try await delivery.deliver()
                },
            ],
            logger: environment.logger.listener("api")
        )
    }
}
