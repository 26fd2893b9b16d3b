// What federation-service needs from the outside world, as replaceable values.

import ENKeyStore
import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

struct FederationDependencies: ServiceDependencies {
    /// The upload mirror and the batch list.
    var store: any FederationRepository
    /// The key store: downloaded keys are written through it.
    var keys: any DiagnosisKeyRepository
    var gateway: any FederationGateway
    var clock: WallClock
    var trigger: DownloadTrigger
    /// The database pools and the gateway client.
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]

    static func live(configuration: FederationConfiguration, logger: Logger) -> FederationDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let readiness = configuration.database.makeReadinessClient(logger: logger)
        let gateway = HTTPFederationGateway(
            baseURL: configuration.gatewayURL,
            identity: configuration.gatewayIdentity,
            policy: configuration.gatewayPolicy,
            logger: logger
        )
        return FederationDependencies(
            store: PostgresFederationRepository(client: client, logger: logger),
            keys: PostgresDiagnosisKeyRepository(client: client, logger: logger),
            gateway: gateway,
            clock: .system,
            trigger: DownloadTrigger(),
            services: [client, readiness, gateway],
            readinessChecks: [PostgresReadinessCheck(client: readiness)]
        )
    }

    /// Everything in memory, with `gateway` as the federation gateway.
    static func inMemory(gateway: any FederationGateway, clock: WallClock = .system) -> FederationDependencies {
        let keys = InMemoryDiagnosisKeyRepository()
        return FederationDependencies(
            store: InMemoryFederationRepository(keys: keys),
            keys: keys,
            gateway: gateway,
            clock: clock,
            trigger: DownloadTrigger(),
            services: [],
            readinessChecks: []
        )
    }
}
