// What verification-service needs from the outside world, as replaceable values.

import ENNHS
import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service's dependencies. `live` connects to PostgreSQL and test-result-service; tests use `postgres(…)` with
/// a test database (and call `shutdown()` at the end) or `inMemory()` for route tests.
struct VerificationDependencies: ServiceDependencies {
    var repository: any VerificationRepository
    var testResults: any TestResultClient
    var clock: WallClock
    /// Long-lived clients to run before the servers (the database pool, the HTTP client).
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]
    /// Shuts down what the application does not run as a service (the HTTP client in tests).
    var shutdown: @Sendable () async throws -> Void
    /// The NHS path's orders and the service's NHS API keys.
    var nhsOrders: any NHSOrderRepository
    var apiKeys: NHSAPIKeyVerifier
    /// Isolation payment tokens and circuit-breaker approvals.
    var isolationPayments: any NHSIsolationPaymentRepository
    var circuitBreakers: any NHSCircuitBreakerRepository

    static func live(configuration: VerificationConfiguration, logger: Logger) -> VerificationDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let readiness = configuration.database.makeReadinessClient(logger: logger)
        let testResults = HTTPTestResultClient(
            baseURL: configuration.testResultURL,
            policy: configuration.upstream,
            serviceToken: configuration.serviceToken,
            logger: logger
        )
        var dependencies = self.postgres(
            client: client,
            testResults: testResults,
            logger: logger,
            readiness: readiness,
            leaseTimeout: configuration.database.leaseTimeout
        )
        dependencies.services = [client, readiness, testResults]
        return dependencies
    }

    /// A repository on a client someone else runs (the test support does), asking test-result-service at the
    /// configured URL; the caller shuts the HTTP client down unless the application runs it as a service.
    /// `/health/ready` asks `readiness` (a client of its own in `live`), else `client`; requests wait at most
    /// `leaseTimeout` for a pooled connection (`live` passes `DATABASE_LEASE_TIMEOUT`).
    static func postgres(
        client: PostgresClient,
        configuration: VerificationConfiguration,
        logger: Logger,
        clock: WallClock = .system,
        readiness: PostgresClient? = nil,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) -> VerificationDependencies {
        let testResults = HTTPTestResultClient(
            baseURL: configuration.testResultURL,
            policy: configuration.upstream,
            serviceToken: configuration.serviceToken,
            logger: logger
        )
        return self.postgres(
            client: client,
            testResults: testResults,
            logger: logger,
            clock: clock,
            readiness: readiness,
            leaseTimeout: leaseTimeout
        )
    }

    private static func postgres(
        client: PostgresClient,
        testResults: HTTPTestResultClient,
        logger: Logger,
        clock: WallClock = .system,
        readiness: PostgresClient? = nil,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) -> VerificationDependencies {
        VerificationDependencies(
            repository: PostgresVerificationRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            testResults: testResults,
            clock: clock,
            services: [],
            readinessChecks: [PostgresReadinessCheck(client: readiness ?? client)],
            shutdown: { try await testResults.shutdown() },
            nhsOrders: PostgresNHSOrderRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            apiKeys: NHSAPIKeyVerifier(
                store: PostgresNHSAPIKeyStore(client: client, logger: logger, leaseTimeout: leaseTimeout)
            ),
            isolationPayments: PostgresNHSIsolationPaymentRepository(
                client: client,
                logger: logger,
                leaseTimeout: leaseTimeout
            ),
            circuitBreakers: PostgresNHSCircuitBreakerRepository(
                client: client,
                logger: logger,
                leaseTimeout: leaseTimeout
            )
        )
    }

    /// Everything in memory: the repositories, and test-result-service as a table the test fills.
    static func inMemory(
        testResults: InMemoryTestResultClient = InMemoryTestResultClient(),
        clock: WallClock = .system
    ) -> VerificationDependencies {
        VerificationDependencies(
            repository: InMemoryVerificationRepository(),
            testResults: testResults,
            clock: clock,
            services: [],
            readinessChecks: [],
            shutdown: {},
            nhsOrders: InMemoryNHSOrderRepository(),
            apiKeys: NHSAPIKeyVerifier(store: InMemoryNHSAPIKeyStore()),
            isolationPayments: InMemoryNHSIsolationPaymentRepository(),
            circuitBreakers: InMemoryNHSCircuitBreakerRepository()
        )
    }
}
