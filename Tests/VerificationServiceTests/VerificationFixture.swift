// Building verification-service for tests: configuration and the routers' runtime.

import ENServiceKit
import ENTestSupport
import Logging
import PostgresNIO

@testable import VerificationService

enum VerificationFixture {
    /// A valid configuration (`TestSettings.verification`) plus `overrides`.
    static func configuration(_ overrides: [String: String] = [:]) throws -> VerificationConfiguration {
        try VerificationConfiguration.load(from: SettingsReader(values: TestSettings.verification(overrides)))
    }

    /// Both routers' runtime over `client`, a database client the caller runs (or never does); the caller shuts the
    /// runtime's dependencies down.
    static func runtime(
        client: PostgresClient,
        configuration: VerificationConfiguration,
        logger: Logger
    ) -> VerificationRuntime {
        let dependencies = VerificationDependencies.postgres(
            client: client,
            configuration: configuration,
            logger: logger
        )
        return VerificationRuntime(configuration: configuration, dependencies: dependencies, environment: .testing())
    }

    /// Both routers' runtime with everything in memory; test-result-service is `testResults`.
    static func inMemoryRuntime(
        testResults: InMemoryTestResultClient = InMemoryTestResultClient(),
        clock: WallClock = .system,
        _ overrides: [String: String] = [:]
    ) throws -> VerificationRuntime {
        VerificationRuntime(
            configuration: try self.configuration(overrides),
            dependencies: .inMemory(testResults: testResults, clock: clock),
            environment: .testing()
        )
    }
}
