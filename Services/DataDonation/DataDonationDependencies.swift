// What data-donation-service needs from the outside world, as replaceable values.

import ENAttestation
import ENNHS
import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service's dependencies. `live` connects to PostgreSQL and DeviceCheck; tests use `postgres(…)` with a test
/// database, or `inMemory(…)`, and a DeviceCheck of their own.
struct DataDonationDependencies: ServiceDependencies {
    var repository: any DonationRepository
    var deviceCheck: any DeviceCheck
    var clock: WallClock
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]
    /// NHS mobile analytics and the service's NHS API keys.
    var nhsAnalytics: any NHSAnalyticsRepository
    var apiKeys: NHSAPIKeyVerifier

    static func live(configuration: DataDonationConfiguration, logger: Logger) -> DataDonationDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let readiness = configuration.database.makeReadinessClient(logger: logger)
        let deviceCheck = HTTPDeviceCheck(
            baseURL: configuration.deviceCheckURL,
            credentials: configuration.deviceCheckCredentials,
            timeout: configuration.deviceCheckTimeout
        )
        var dependencies = self.postgres(
            client: client,
            deviceCheck: deviceCheck,
            logger: logger,
            readiness: readiness,
            leaseTimeout: configuration.database.leaseTimeout
        )
        dependencies.services = [client, readiness, deviceCheck]
        return dependencies
    }

    /// A repository on a client someone else runs (the test support does). `/health/ready` asks `readiness`, else
    /// `client`.
    static func postgres(
        client: PostgresClient,
        deviceCheck: any DeviceCheck,
        logger: Logger,
        clock: WallClock = .system,
        readiness: PostgresClient? = nil,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) -> DataDonationDependencies {
        DataDonationDependencies(
            repository: PostgresDonationRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            deviceCheck: deviceCheck,
            clock: clock,
            services: [],
            readinessChecks: [PostgresReadinessCheck(client: readiness ?? client)],
            nhsAnalytics: PostgresNHSAnalyticsRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            apiKeys: NHSAPIKeyVerifier(
                store: PostgresNHSAPIKeyStore(client: client, logger: logger, leaseTimeout: leaseTimeout)
            )
        )
    }

    /// Everything in memory; Apple's DeviceCheck is the caller's.
    static func inMemory(deviceCheck: any DeviceCheck, clock: WallClock = .system) -> DataDonationDependencies {
        let nhsAnalytics = InMemoryNHSAnalyticsRepository()
        return DataDonationDependencies(
            repository: InMemoryDonationRepository(nhsAnalytics: nhsAnalytics),
            deviceCheck: deviceCheck,
            clock: clock,
            services: [],
            readinessChecks: [],
            nhsAnalytics: nhsAnalytics,
            apiKeys: NHSAPIKeyVerifier(store: InMemoryNHSAPIKeyStore())
        )
    }
}
