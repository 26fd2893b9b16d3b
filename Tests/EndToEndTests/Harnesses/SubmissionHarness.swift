// submission-service with its real peers: the test database, verification-service's internal API on a socket, which
// asks test-result-service's internal API on another; all three share one manual clock.

import Crypto
import ENKeyStore
import ENModels
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PostgresNIO
import Testing

@testable import SubmissionService
@testable import TestResultService
@testable import VerificationService

struct SubmissionHarness: Sendable {
    let database: PostgresTestDatabase
    let clock: ManualClock
    let runtime: SubmissionRuntime
    let app: ServiceApplication<ServiceRequestContext>
    let verification: VerificationRuntime
    let verificationApp: ServiceApplication<ServiceRequestContext>

    static let groups = [TestResultMigrations.group, VerificationMigrations.group, KeyStoreMigrations.group]

    static func run(
        _ overrides: [String: String] = [:],
        verificationURL: String? = nil,
        logger: Logger? = nil,
        _ body: @Sendable (SubmissionHarness) async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let clock = ManualClock(SubmissionPayloads.start)
        let environment = logger.map { ServiceEnvironment.testing(logger: $0) } ?? ServiceEnvironment.testing()
        try await TestResultPeer.run(database: database, clock: clock, environment: environment) { testResultPort in
            let verificationConfiguration = try VerificationConfiguration.load(
                from: SettingsReader(
                    values: TestSettings.verification([
                        "TEST_RESULT_INTERNAL_URL": "http://127.0.0.1:\(testResultPort)",
                        "TELETAN_JWT_PUBLIC_KEYS": P256.Signing.PrivateKey().publicKey.pemRepresentation,
                    ])
                )
            )
            let verificationDependencies = VerificationDependencies.postgres(
                client: database.client,
                configuration: verificationConfiguration,
                logger: database.logger,
                clock: clock.wallClock
            )
            let verification = VerificationRuntime(
                configuration: verificationConfiguration,
                dependencies: verificationDependencies,
                environment: environment
            )
            let verificationInternal = Application(
                router: try Verification.buildInternalRouter(verification),
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                logger: database.logger
            )
            try await withCleanup {
                try await LiveServer.run(verificationInternal) { verificationPort in
                    try await self.run(
                        overrides,
                        verificationURL: verificationURL ?? "http://127.0.0.1:\(verificationPort)",
                        verification: verification,
                        database: database,
                        clock: clock,
                        body
                    )
                }
            } cleanup: {
                try await verificationDependencies.shutdown()
            }
        }
    }

    /// Builds submission on the running verification-service.
    private static func run(
        _ overrides: [String: String],
        verificationURL: String,
        verification: VerificationRuntime,
        database: PostgresTestDatabase,
        clock: ManualClock,
        _ body: @Sendable (SubmissionHarness) async throws -> Void
    ) async throws {
        var settings = overrides
        settings["VERIFICATION_INTERNAL_URL"] = verificationURL
        let configuration = try SubmissionConfiguration.load(
            from: SettingsReader(values: TestSettings.submission(settings))
        )
        let logger = verification.environment.logger
        let client = HTTPVerificationClient(
            baseURL: configuration.verificationURL,
            policy: configuration.upstream,
            serviceToken: configuration.serviceToken,
            logger: logger
        )
        // A pool of submission's own, as in production: a submission holds its connection while
        // verification-service (on the shared test pool) checks the TAN.
        let pool = database.configuration.makeClient(logger: database.logger)
        let poolTask = Task { await pool.run() }
        defer { poolTask.cancel() }
        let dependencies = SubmissionDependencies.postgres(
            client: pool,
            verification: client,
            logger: logger,
            clock: clock.wallClock
        )
        let runtime = SubmissionRuntime(
            configuration: configuration,
            dependencies: dependencies,
            environment: verification.environment
        )
        let harness = SubmissionHarness(
            database: database,
            clock: clock,
            runtime: runtime,
            app: Application(router: try Submission.buildRouter(runtime)),
            verification: verification,
            verificationApp: Application(router: try Verification.buildPublicRouter(verification))
        )
        try await withCleanup {
            try await body(harness)
        } cleanup: {
            try await dependencies.shutdown()
        }
    }

    // MARK: TANs

    /// A TAN of a connected lab's positive result (code 2 PCR, 7 rapid test), through verification's app API.
    func labTAN(code: Int = 2) async throws -> String {
        let guid = TestIDs.hashedGUID()
        try await TestResultPeer.storeResult(guid, code: code, database: self.database, now: self.clock.now)
        let token = try await self.verificationCall(
            "/version/v1/registrationToken",
            #"{"key":"\#(guid)","keyType":"GUID"}"#,
            field: "registrationToken"
        )
        return try await self.verificationCall("/version/v1/tan", #"{"registrationToken":"\#(token)"}"#, field: "tan")
    }

    /// A TAN of a teleTAN of `type`.
    func teleTANTAN(_ type: TeleTANType) async throws -> String {
        let teleTAN = try await self.verification.engine.createTeleTAN(type: type)
        let token = try await self.verificationCall(
            "/version/v1/registrationToken",
            #"{"key":"\#(teleTAN.value)","keyType":"TELETAN"}"#,
            field: "registrationToken"
        )
        return try await self.verificationCall("/version/v1/tan", #"{"registrationToken":"\#(token)"}"#, field: "tan")
    }

    private func verificationCall(_ path: String, _ json: String, field: String) async throws -> String {
        try await self.verificationApp.test(.router) { client in
            let response = try await client.execute(
                uri: path,
                method: .post,
                headers: .json,
                body: ByteBuffer(string: json)
            )
            let object = try JSONSerialization.jsonObject(with: response.body.data) as? [String: Any]
            return try #require(object?[field] as? String, "\(path): \(response.status) \(response.body.text)")
        }
    }

    // MARK: Calls

    func submit(
        _ payload: SubmissionPayload,
        tan: String?,
        path: String = "/version/v1/diagnosis-keys",
        fake: String = "0"
    ) async throws -> RouterReply {
        try await self.app.post(path, headers: SubmissionPayloads.headers(tan: tan, fake: fake), body: payload.bytes)
    }

    /// The same submission `count` times at once.
    func parallel(_ count: Int, _ payload: SubmissionPayload, tan: String) async throws -> [RouterReply] {
        try await self.app.post(
            "/version/v1/diagnosis-keys",
            headers: SubmissionPayloads.headers(tan: tan),
            body: payload.bytes,
            times: count
        )
    }

    /// `SELECT count(*)` of a table.
    func count(_ table: String, where condition: String = "true") async throws -> Int {
        try await self.database.count(table, where: condition)
    }

    /// Rows of all four submission tables.
    func storedRows() async throws -> Int {
        var total = 0
        for table in [
            "diagnosis_key", "federation_upload_key", "check_in_protected_reports", "trace_time_interval_warning",
        ] {
            total += try await self.count(table)
        }
        return total
    }

    func execute(_ sql: String) async throws {
        _ = try await self.database.client.query(PostgresQuery(unsafeSQL: sql))
    }
}

extension DiagnosisKeyRepository {
    /// Stores `submission` without a TAN check, for tests of the storage rules alone.
    func store(_ submission: PreparedSubmission) async throws -> KeySubmissionOutcome {
        try await self.store(submission.stored) { (_: UUID) async throws(SubmissionFailure) in }
    }
}
