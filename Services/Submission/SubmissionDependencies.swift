// What submission-service needs from the outside world, as replaceable values.

import ENKeyStore
import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service's dependencies. `live` connects to PostgreSQL and verification-service; tests use `postgres(…)` with
/// a test database (and call `shutdown()` at the end) or `inMemory()` for route tests.
struct SubmissionDependencies: ServiceDependencies {
    var keys: any DiagnosisKeyRepository
    var verifier: any VerificationClient
    var clock: WallClock
    /// Long-lived clients to run before the server (the database pool, the HTTP client).
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]
    /// Shuts down what the application does not run as a service (the HTTP client in tests).
    var shutdown: @Sendable () async throws -> Void

    static func live(configuration: SubmissionConfiguration, logger: Logger) -> SubmissionDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let readiness = configuration.database.makeReadinessClient(logger: logger)
        let verification = HTTPVerificationClient(
            baseURL: configuration.verificationURL,
            policy: configuration.upstream,
            serviceToken: configuration.serviceToken,
            logger: logger
        )
        var dependencies = self.postgres(
            client: client,
            verification: verification,
            logger: logger,
            readiness: readiness,
            leaseTimeout: configuration.database.leaseTimeout
        )
        dependencies.services = [client, readiness, verification]
        return dependencies
    }

    /// The key store on a client someone else runs (the test support does), verifying TANs with `verification`.
    /// `/health/ready` asks `readiness` (a client of its own in `live`), else `client`; requests wait at most
    /// `leaseTimeout` for a pooled connection (`live` passes `DATABASE_LEASE_TIMEOUT`).
    static func postgres(
        client: PostgresClient,
        verification: HTTPVerificationClient,
        logger: Logger,
        clock: WallClock = .system,
        readiness: PostgresClient? = nil,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) -> SubmissionDependencies {
        SubmissionDependencies(
            keys: PostgresDiagnosisKeyRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            verifier: verification,
            clock: clock,
            services: [],
            readinessChecks: [PostgresReadinessCheck(client: readiness ?? client)],
            shutdown: { try await verification.shutdown() }
        )
    }

    /// Everything in memory: the key store, and verification-service as the TANs the test issues.
    static func inMemory(
        verifier: any VerificationClient = InMemoryVerificationClient(),
        keys: any DiagnosisKeyRepository = InMemoryDiagnosisKeyRepository(),
        clock: WallClock = .system
    ) -> SubmissionDependencies {
        SubmissionDependencies(
            keys: keys,
            verifier: verifier,
            clock: clock,
            services: [],
            readinessChecks: [],
            shutdown: {}
        )
    }
}
