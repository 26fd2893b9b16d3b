// What test-result-service needs from the outside world, as replaceable values.

import ENNHS
import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service's dependencies. `live` connects to PostgreSQL; tests use `postgres(client:)` with a test database
/// or `inMemory` for route tests.
struct TestResultDependencies: ServiceDependencies {
    var repository: any TestResultRepository
    var clock: WallClock
    /// Long-lived clients to run before the servers (the database pool).
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]
    /// The NHS path's results and the service's NHS API keys.
    var nhsResults: any NHSResultRepository
    var apiKeys: NHSAPIKeyVerifier

    /// A connection pool from the configuration; the pool runs as a service of the application.
    static func live(configuration: TestResultConfiguration, logger: Logger) -> TestResultDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let readiness = configuration.database.makeReadinessClient(logger: logger)
        var dependencies = self.postgres(
            client: client,
            logger: logger,
            readiness: readiness,
            leaseTimeout: configuration.database.leaseTimeout
        )
        dependencies.services = [client, readiness]
        return dependencies
    }

    /// A repository on a client someone else runs (the test support does).
    /// `/health/ready` asks `readiness` (a client of its own in `live`), else `client`; requests wait at most
    /// `leaseTimeout` for a pooled connection (`live` passes `DATABASE_LEASE_TIMEOUT`).
    static func postgres(
        client: PostgresClient,
        logger: Logger,
        clock: WallClock = .system,
        readiness: PostgresClient? = nil,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) -> TestResultDependencies {
        TestResultDependencies(
            repository: PostgresTestResultRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            clock: clock,
            services: [],
            readinessChecks: [PostgresReadinessCheck(client: readiness ?? client)],
            nhsResults: PostgresNHSResultRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            apiKeys: NHSAPIKeyVerifier(
                store: PostgresNHSAPIKeyStore(client: client, logger: logger, leaseTimeout: leaseTimeout)
            )
        )
    }

    /// Everything in memory.
    static func inMemory(clock: WallClock = .system) -> TestResultDependencies {
        TestResultDependencies(
            repository: InMemoryTestResultRepository(),
            clock: clock,
            services: [],
            readinessChecks: [],
            nhsResults: InMemoryNHSResultRepository(),
            apiKeys: NHSAPIKeyVerifier(store: InMemoryNHSAPIKeyStore())
        )
    }
}
