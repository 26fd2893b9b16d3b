// Building submission-service for unit tests: configuration, recording fakes, and the router over them.

import ENKeyStore
import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import SubmissionService

enum SubmissionFixture {
    /// A valid configuration (`TestSettings.submission`) plus `overrides`.
    static func configuration(_ overrides: [String: String] = [:]) throws -> SubmissionConfiguration {
        try SubmissionConfiguration.load(from: SettingsReader(values: TestSettings.submission(overrides)))
    }
}

// MARK: - Recording fakes for unit tests

/// A verifier that answers `verdict` and counts its calls.
final class RecordingVerifier: VerificationClient {
    let verdict: TANVerdict
    let calls = Mutexed(0)

    init(_ verdict: TANVerdict = .valid(teleTANType: nil)) {
        self.verdict = verdict
    }

    func verify(_ tan: String, event: Bool, attempt: UUID) async throws(UpstreamUnavailable) -> TANVerdict {
        self.calls.withLock { $0 += 1 }
        return self.verdict
    }

    func verifyNHSSubmissionToken(
        _ token: String,
        attempt: UUID
    ) async throws(UpstreamUnavailable) -> NHSTokenVerdict {
        self.calls.withLock { $0 += 1 }
        guard case .valid = self.verdict else { return .rejected }
        return .valid(.labResult)
    }

    func tanRedemption(hash: String) async throws(UpstreamUnavailable) -> CredentialRedemption? { nil }

    func nhsTokenRedemption(hash: String) async throws(UpstreamUnavailable) -> CredentialRedemption? { nil }
}

/// The in-memory key store, remembering every submission it wrote; or, `failing`, a store whose database is down
/// before the authorisation runs.
final class RecordingKeyRepository: DiagnosisKeyRepository {
    let stored = Mutexed<[KeySubmission]>([])
    /// The store behind the recording, for what it holds beyond the submissions (`storedSelfReports`).
    let keys = InMemoryDiagnosisKeyRepository()
    let failing: Bool

    init(failing: Bool = false) {
        self.failing = failing
    }

    func hold(
        _ attempt: HeldAttempt,
        selfReport: (limits: SelfReportLimits, dayStartHour: Int64, keyData: [[UInt8]])?
    ) async throws -> SelfReportRefusal? {
        if self.failing { throw RouterHarnessError.databaseDown }
        return try await self.keys.hold(attempt, selfReport: selfReport)
    }

    func complete(
        _ attempt: UUID,
        credentialHash: String,
        writing submission: KeySubmission
    ) async throws -> KeySubmissionOutcome? {
        let outcome = try await self.keys.complete(attempt, credentialHash: credentialHash, writing: submission)
        if outcome != nil { self.stored.withLock { $0.append(submission) } }
        return outcome
    }

    func storeFederated(_ keys: [FederatedKey], submissionHour: Int64) async throws -> Int {
        try await self.keys.storeFederated(keys, submissionHour: submissionHour)
    }

    func release(_ attempt: UUID) async throws {
        try await self.keys.release(attempt)
    }

    func postpone(_ attempt: UUID, until due: Date) async throws {
        try await self.keys.postpone(attempt, until: due)
    }

    func dueAttempts(at now: Date, limit: Int) async throws -> [HeldAttempt] {
        try await self.keys.dueAttempts(at: now, limit: limit)
    }

    func heldAttempt(_ id: UUID) async throws -> HeldAttempt? {
        try await self.keys.heldAttempt(id)
    }

    func heldAttemptCount() async throws -> HeldAttemptCount {
        try await self.keys.heldAttemptCount()
    }

    func withPublicationRun<Result: Sendable>(
        _ body: @Sendable (any KeyPublicationRun) async throws -> Result
    ) async throws -> Result? {
        try await self.keys.withPublicationRun(body)
    }
}

/// The submission router over recording fakes: no database, no verification-service, data-donation-service as the
/// OTPs the test issues. Fake requests record their delay instead of waiting it.
struct SubmissionRouterHarness: Sendable {
    let verifier: RecordingVerifier
    let selfReports: InMemorySelfReportClient
    let store: RecordingKeyRepository
    let runtime: SubmissionRuntime
    let app: ServiceApplication<ServiceRequestContext>
    let sleeps: Mutexed<[Duration]>

    init(
        _ overrides: [String: String] = [:],
        verdict: TANVerdict = .valid(teleTANType: nil),
        databaseDown: Bool = false
    ) throws {
        let configuration = try SubmissionFixture.configuration(overrides)
        self.verifier = RecordingVerifier(verdict)
        self.selfReports = InMemorySelfReportClient()
        self.store = RecordingKeyRepository(failing: databaseDown)
        var dependencies = SubmissionDependencies.inMemory(
            verifier: self.verifier,
            selfReports: self.selfReports,
            keys: self.store,
            clock: WallClock { SubmissionPayloads.start }
        )
        dependencies.apiKeys = NHSAPIKeyVerifier(store: TestNHS.keyStore())
        self.runtime = SubmissionRuntime(
            configuration: configuration,
            dependencies: dependencies,
            environment: .testing()
        )
        let sleeps = Mutexed<[Duration]>([])
        var controller = self.runtime.controller
        controller.sleep = { duration in sleeps.withLock { $0.append(duration) } }
        self.sleeps = sleeps
        self.app = Application(router: try Submission.buildRouter(self.runtime, controller: controller))
    }

    func post(
        _ body: ByteBuffer?,
        path: String = "/version/v1/diagnosis-keys",
        headers: HTTPFields
    ) async throws -> RouterReply {
        try await self.app.post(path, headers: headers, body: body)
    }
}

enum RouterHarnessError: Error {
    case databaseDown
}

typealias Reply = RouterReply
