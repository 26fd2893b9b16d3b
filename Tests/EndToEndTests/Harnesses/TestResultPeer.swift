// test-result-service's internal API on a socket, for the services that ask it.

import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import Hummingbird
import Logging

@testable import TestResultService

/// test-result-service's internal listener on the test database, with the given clock; lab results go in through
/// its repository.
enum TestResultPeer {
    /// Runs `body` with the port of the internal API.
    static func run(
        database: PostgresTestDatabase,
        clock: ManualClock,
        environment: ServiceEnvironment,
        _ body: @Sendable (_ port: Int) async throws -> Void
    ) async throws {
        let app = Application(
            router: TestResult.buildInternalRouter(
                configuration: try TestResultConfiguration.load(
                    from: SettingsReader(values: TestSettings.testResult())
                ),
                dependencies: TestResultDependencies.postgres(
                    client: database.client,
                    logger: database.logger,
                    clock: clock.wallClock
                ),
                environment: environment,
                metrics: TestResultMetrics(factory: environment.metricsFactory)
            ),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: database.logger
        )
        try await LiveServer.run(app, body)
    }

    /// Stores a lab result for `guid` (code 2 = positive PCR, 7 = positive rapid test), sampled an hour before `now`,
    /// optionally protected by the date of birth.
    static func storeResult(
        _ guid: String,
        code: Int,
        labID: String? = "lab-1",
        dobProtected: Bool = false,
        database: PostgresTestDatabase,
        now: Date
    ) async throws {
        _ = try await PostgresTestResultRepository(client: database.client, logger: database.logger).store(
            [
                ResultUpload(
                    key: guid.lowercased(),
                    result: LabTestResult(code: code)!,
                    sampleCollectedAt: now.addingTimeInterval(-3600),
                    labID: labID,
                    dobProtected: dobProtected
                )
            ],
            now: now
        )
    }
}
