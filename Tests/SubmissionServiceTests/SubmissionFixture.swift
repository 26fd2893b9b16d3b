// Building submission-service for tests: payloads, configuration, recording fakes for unit tests, and a harness
// with a real database, a real verification-service and a real test-result-service on sockets.

import Crypto
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
import SwiftProtobuf
import Testing

@testable import SubmissionService
@testable import TestResultService
@testable import VerificationService

enum SubmissionFixture {
    /// 2023-11-14 22:13:20 UTC.
    static let start = Date(timeIntervalSince1970: 1_700_000_000)
    static let midnight = ENTime.midnightInterval(start)

    /// A valid configuration with port 0, a placeholder database and fast retries, plus `overrides`.
    static func configuration(_ overrides: [String: String] = [:]) throws -> SubmissionConfiguration {
        var values = [
            "DATABASE_URL": "postgres://test:secret@127.0.0.1:1/test",
            "HTTP_PORT": "0",
            "VERIFICATION_RETRY_BACKOFF": "1ms",
            "FAKE_DELAY_INITIAL": "1ms",
            "SUPPORTED_COUNTRIES": "DE,FR,IT,NL",
        ]
        values.merge(overrides) { _, new in new }
        return try SubmissionConfiguration.load(from: SettingsReader(values: values))
    }

    /// A key that started `daysAgo` midnights before `start`'s day.
    static func key(daysAgo: Int = 1, trl: Int32? = 6, dsos: Int32? = nil, period: Int32 = 144) -> TemporaryExposureKey
    {
        var key = TemporaryExposureKey()
        key.keyData = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        key.rollingStartIntervalNumber = Int32(self.midnight - daysAgo * 144)
        key.rollingPeriod = period
        if let trl { key.transmissionRiskLevel = trl }
        if let dsos { key.daysSinceOnsetOfSymptoms = dsos }
        return key
    }

    /// A valid key submission: `count` keys for the days before today.
    static func payload(
        keys count: Int = 14,
        type: SubmissionPayload.SubmissionType = .pcrTest,
        consent: Bool = true
    ) -> SubmissionPayload {
        var payload = SubmissionPayload()
        payload.keys = (0..<count).map { self.key(daysAgo: $0 % 14 + 1) }
        payload.origin = "DE"
        payload.visitedCountries = ["FR"]
        payload.consentToFederation = consent
        payload.submissionType = type
        payload.requestPadding = Data(repeating: 0x61, count: 100)
        return payload
    }

    static func protectedReport(location: UInt8 = 1) -> CheckInProtectedReport {
        var report = CheckInProtectedReport()
        report.locationIDHash = Data(repeating: location, count: 32)
        report.iv = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        report.encryptedCheckInRecord = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        report.mac = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        return report
    }

    /// An unencrypted check-in at `location` starting `hoursAgo` before `start`, lasting `minutes`.
    static func checkIn(location: UInt8 = 7, hoursAgo: Int = 5, minutes: Int = 60, trl: UInt32 = 5) -> CheckIn {
        var checkIn = CheckIn()
        checkIn.locationID = Data(repeating: location, count: 32)
        let start = ENTime.interval(self.start) - hoursAgo * 6
        checkIn.startIntervalNumber = UInt32(start)
        checkIn.endIntervalNumber = UInt32(start + minutes / 10)
        checkIn.transmissionRiskLevel = trl
        return checkIn
    }

    /// A valid submission on behalf: two encrypted check-ins at one location.
    static func onBehalfPayload() -> SubmissionPayload {
        var payload = SubmissionPayload()
        payload.submissionType = .hostWarning
        payload.checkInProtectedReports = [self.protectedReport(location: 9), self.protectedReport(location: 9)]
        return payload
    }

    static func headers(tan: String? = nil, fake: String = "0") -> HTTPFields {
        var headers: HTTPFields = [.contentType: "application/x-protobuf", SubmissionController.fakeHeader: fake]
        if let tan { headers[SubmissionController.authorizationHeader] = tan }
        return headers
    }
}

extension SubmissionPayload {
    var bytes: ByteBuffer { ByteBuffer(bytes: try! self.serializedBytes() as [UInt8]) }
}

// MARK: - Recording fakes for unit tests

/// A verifier that answers `verdict` and counts its calls.
final class RecordingVerifier: TANVerifying {
    let verdict: TANVerdict
    let calls = Mutexed(0)

    init(_ verdict: TANVerdict = .valid(teleTANType: nil)) {
        self.verdict = verdict
    }

    func verify(_ tan: String) async throws(UpstreamUnavailable) -> TANVerdict {
        self.calls.withLock { $0 += 1 }
        return self.verdict
    }
}

/// A store that keeps what it was given in memory.
final class RecordingStore: SubmissionStoring {
    let stored = Mutexed<[PreparedSubmission]>([])

    /// When set, the store fails like an unreachable database, before it runs the authorisation.
    let failing: Bool

    init(failing: Bool = false) {
        self.failing = failing
    }

    func store(
        _ submission: PreparedSubmission,
        authorize: () async throws(SubmissionFailure) -> Void
    ) async throws(StoreFailure) -> SubmissionService.StoreOutcome {
        if self.failing { throw .database(UnitHarnessError.databaseDown, afterAuthorization: false) }
        do { try await authorize() } catch { throw .refused(error) }
        self.stored.withLock { $0.append(submission) }
        return SubmissionService.StoreOutcome(
            keys: submission.keys.count,
            protectedReports: submission.protectedReports.count,
            traceWarnings: submission.traceWarnings.count
        )
    }
}

/// The submission router over recording fakes: no database, no verification-service.
struct UnitHarness: Sendable {
    let verifier: RecordingVerifier
    let store: RecordingStore
    let parts: Submission.Parts
    let app: Submission.App
    let sleeps: Mutexed<[Duration]>

    init(
        _ overrides: [String: String] = [:],
        verdict: TANVerdict = .valid(teleTANType: nil),
        databaseDown: Bool = false
    ) throws {
        let configuration = try SubmissionFixture.configuration(overrides)
        self.verifier = RecordingVerifier(verdict)
        self.store = RecordingStore(failing: databaseDown)
        let dependencies = SubmissionDependencies(
            store: self.store,
            verifier: self.verifier,
            clock: WallClock { SubmissionFixture.start },
            services: [],
            readinessChecks: [],
            shutdown: {}
        )
        self.parts = Submission.Parts(configuration: configuration, dependencies: dependencies, environment: .testing())
        let sleeps = Mutexed<[Duration]>([])
        var controller = self.parts.controller
        controller.sleep = { duration in sleeps.withLock { $0.append(duration) } }
        self.sleeps = sleeps
        self.app = Application(router: try Submission.buildRouter(self.parts, controller: controller))
    }

    func post(
        _ body: ByteBuffer?,
        path: String = "/version/v1/diagnosis-keys",
        headers: HTTPFields
    ) async throws -> Reply {
        try await self.app.post(path, headers: headers, body: body)
    }
}

enum UnitHarnessError: Error {
    case databaseDown
}

typealias Reply = RouterReply

// MARK: - The harness on real services

/// submission-service over the test database, verifying TANs against verification-service's real internal API on a
/// socket, which asks test-result-service's real internal API on another; all three share one manual clock.
struct SubmissionHarness: Sendable {
    let database: PostgresTestDatabase
    let clock: ManualClock
    let parts: Submission.Parts
    let app: Submission.App
    let verification: Verification.Parts
    let verificationApp: Verification.App
    let labResults: PostgresTestResultRepository

    static let groups = [TestResultMigrations.group, VerificationMigrations.group, SubmissionMigrations.group]

    static func run(
        _ overrides: [String: String] = [:],
        verificationURL: String? = nil,
        logger: Logger? = nil,
        _ body: @Sendable (SubmissionHarness) async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let clock = ManualClock(SubmissionFixture.start)
        let environment = logger.map { ServiceEnvironment.testing(logger: $0) } ?? ServiceEnvironment.testing()
        let placeholder = [
            "DATABASE_URL": "postgres://test:secret@127.0.0.1:1/test", "HTTP_PORT": "0", "INTERNAL_HTTP_PORT": "0",
        ]
        let testResultApp = Application(
            router: TestResult.buildInternalRouter(
                configuration: try TestResultConfiguration.load(from: SettingsReader(values: placeholder)),
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
        try await LiveServer.run(testResultApp) { testResultPort in
            var values = placeholder
            values["TEST_RESULT_INTERNAL_URL"] = "http://127.0.0.1:\(testResultPort)"
            values["TELETAN_JWT_PUBLIC_KEYS"] = P256.Signing.PrivateKey().publicKey.pemRepresentation
            let verificationConfiguration = try VerificationConfiguration.load(from: SettingsReader(values: values))
            let verificationDependencies = VerificationDependencies.postgres(
                client: database.client,
                configuration: verificationConfiguration,
                logger: database.logger,
                clock: clock.wallClock
            )
            let verification = Verification.Parts(
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
                try await self.run(
                    overrides,
                    verificationURL: verificationURL,
                    verification: verification,
                    app: verificationInternal,
                    database: database,
                    clock: clock,
                    body
                )
            } cleanup: {
                try await verificationDependencies.shutdown()
            }
        }
    }

    /// The part of `run` that starts verification's internal API and builds submission on it.
    private static func run(
        _ overrides: [String: String],
        verificationURL: String?,
        verification: Verification.Parts,
        app verificationInternal: Verification.App,
        database: PostgresTestDatabase,
        clock: ManualClock,
        _ body: @Sendable (SubmissionHarness) async throws -> Void
    ) async throws {
        let environment = verification.environment
        try await LiveServer.run(verificationInternal) { verificationPort in
            var settings = overrides
            settings["VERIFICATION_INTERNAL_URL"] = verificationURL ?? "http://127.0.0.1:\(verificationPort)"
            let configuration = try SubmissionFixture.configuration(settings)
            let logger = environment.logger
            let client = VerificationClient(
                baseURL: configuration.verificationURL,
                policy: configuration.upstream,
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
            let parts = Submission.Parts(
                configuration: configuration,
                dependencies: dependencies,
                environment: environment
            )
            let harness = SubmissionHarness(
                database: database,
                clock: clock,
                parts: parts,
                app: Application(router: try Submission.buildRouter(parts)),
                verification: verification,
                verificationApp: Application(router: try Verification.buildPublicRouter(verification)),
                labResults: PostgresTestResultRepository(client: database.client, logger: database.logger)
            )
            try await withCleanup {
                try await body(harness)
            } cleanup: {
                try await dependencies.shutdown()
            }
        }
    }

    // MARK: TANs

    /// A TAN of a connected lab's positive result (code 2 PCR, 7 rapid test), through verification's app API.
    func labTAN(code: Int = 2) async throws -> String {
        let guid = TestIDs.hashedGUID()
        _ = try await self.labResults.store(
            [
                ResultUpload(
                    key: guid,
                    result: LabTestResult(code: code)!,
                    sampleCollectedAt: self.clock.now.addingTimeInterval(-3600),
                    labID: "lab-1"
                )
            ],
            now: self.clock.now
        )
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
    ) async throws -> Reply {
        try await self.app.post(path, headers: SubmissionFixture.headers(tan: tan, fake: fake), body: payload.bytes)
    }

    /// The same submission `count` times at once.
    func parallel(_ count: Int, _ payload: SubmissionPayload, tan: String) async throws -> [Reply] {
        try await self.app.post(
            "/version/v1/diagnosis-keys",
            headers: SubmissionFixture.headers(tan: tan),
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

extension KeyStore {
    /// Stores `submission` without a TAN check, for tests of the storage rules alone.
    func store(_ submission: PreparedSubmission) async throws -> SubmissionService.StoreOutcome {
        try await self.store(submission) { () async throws(SubmissionFailure) in }
    }
}
