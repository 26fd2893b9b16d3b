// What distribution-service needs from the outside world, as replaceable values.

import ENKeyStore
import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service's dependencies: the key store it reads and prunes, the object store it publishes to, the clock.
struct DistributionDependencies: ServiceDependencies {
    var keys: any DiagnosisKeyRepository
    var objectStore: ConfiguredObjectStore
    var clock: WallClock
    /// The database pool and the object store's HTTP client.
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]

    /// A pool from the configuration and the configured object store, both run as services.
    static func live(configuration: DistributionConfiguration, logger: Logger) -> DistributionDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let readiness = configuration.database.makeReadinessClient(logger: logger)
        let objectStore = ConfiguredObjectStore.make(configuration.objectStore, logger: logger)
        var dependencies = self.postgres(
            client: client,
            objectStore: objectStore,
            logger: logger,
            readiness: readiness,
            leaseTimeout: configuration.database.leaseTimeout
        )
        dependencies.services = [client, readiness, objectStore]
        return dependencies
    }

    /// The key store on a client someone else runs (the test support does).
    /// `/health/ready` asks `readiness` (a client of its own in `live`), else `client`; requests wait at most
    /// `leaseTimeout` for a pooled connection (`live` passes `DATABASE_LEASE_TIMEOUT`).
    static func postgres(
        client: PostgresClient,
        objectStore: ConfiguredObjectStore,
        logger: Logger,
        clock: WallClock = .system,
        readiness: PostgresClient? = nil,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) -> DistributionDependencies {
        DistributionDependencies(
            keys: PostgresDiagnosisKeyRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            objectStore: objectStore,
            clock: clock,
            services: [],
            readinessChecks: [PostgresReadinessCheck(client: readiness ?? client)]
        )
    }
}
