// What submission-service needs from the outside world, as replaceable values.

import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service's dependencies. `live` connects to PostgreSQL and verification-service; tests use `postgres(…)`
/// with a test database and call `shutdown()` at the end.
struct SubmissionDependencies: Sendable {
    var store: any SubmissionStoring
    var verifier: any TANVerifying
    var clock: WallClock
    /// Long-lived clients to run before the server (the database pool, the HTTP client).
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]
    /// Shuts down what the application does not run as a service (the HTTP client in tests).
    var shutdown: @Sendable () async throws -> Void

    static func live(configuration: SubmissionConfiguration, logger: Logger) -> SubmissionDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let verification = VerificationClient(
            baseURL: configuration.verificationURL,
            policy: configuration.upstream,
            logger: logger
        )
        var dependencies = self.postgres(client: client, verification: verification, logger: logger)
        dependencies.services = [client, verification]
        return dependencies
    }

    /// A store on a client someone else runs (the test support does), verifying TANs with `verification`.
    static func postgres(
        client: PostgresClient,
        verification: VerificationClient,
        logger: Logger,
        clock: WallClock = .system
    ) -> SubmissionDependencies {
        SubmissionDependencies(
            store: KeyStore(client: client, logger: logger),
            verifier: verification,
            clock: clock,
            services: [],
            readinessChecks: [PostgresReadinessCheck(client: client)],
            shutdown: { try await verification.shutdown() }
        )
    }
}
