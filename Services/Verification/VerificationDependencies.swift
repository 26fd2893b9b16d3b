// What verification-service needs from the outside world, as replaceable values.

import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service's dependencies. `live` connects to PostgreSQL and test-result-service; tests use `postgres(…)`
/// with a test database and call `shutdown()` at the end.
struct VerificationDependencies: Sendable {
    var store: VerificationStore
    var testResults: TestResultClient
    var clock: WallClock
    /// Long-lived clients to run before the servers (the database pool, the HTTP client).
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]

    static func live(configuration: VerificationConfiguration, logger: Logger) -> VerificationDependencies {
        let client = configuration.database.makeClient(logger: logger)
        var dependencies = self.postgres(client: client, configuration: configuration, logger: logger)
        dependencies.services = [client, dependencies.testResults]
        return dependencies
    }

    /// A store on a client someone else runs (the test support does); the test-result client must be shut down
    /// by the caller unless the application runs it as a service.
    static func postgres(
        client: PostgresClient,
        configuration: VerificationConfiguration,
        logger: Logger,
        clock: WallClock = .system
    ) -> VerificationDependencies {
        VerificationDependencies(
            store: VerificationStore(client: client, logger: logger),
            testResults: TestResultClient(
                baseURL: configuration.testResultURL,
                policy: configuration.upstream,
                logger: logger
            ),
            clock: clock,
            services: [],
            readinessChecks: [PostgresReadinessCheck(client: client)]
        )
    }

    func shutdown() async throws {
        try await self.testResults.shutdown()
    }
}
