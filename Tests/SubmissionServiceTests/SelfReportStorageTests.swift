// Self-report submissions through the router into PostgreSQL: the rows they write and do not write, the checks that
// read the `keys` database before the OTP is redeemed, and what distribution and federation see (cwa-server §1.4,
// §1.8).

import ENKeyStore
import ENModels
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

@Suite("Self-report storage (PostgreSQL)", .postgres(KeyStoreMigrations.group))
struct SelfReportStorageTests {
    static let otp = SelfReportTests.otp
    static let tan = SelfReportTests.tan
    static let selfTest = "SUBMISSION_TYPE_SRS_SELF_TEST"

    /// The router over the test's database, an in-memory verification-service and `selfReports` (by default an
    /// in-memory data-donation-service that issued `otp`), at `SubmissionPayloads.start`.
    struct Harness {
        let database: PostgresTestDatabase
        let verifier = InMemoryVerificationClient()
        let selfReports: any SelfReportClient
        let keys: PostgresDiagnosisKeyRepository
        let app: ServiceApplication<ServiceRequestContext>

        init(_ overrides: [String: String] = [:], selfReports: (any SelfReportClient)? = nil) async throws {
            self.database = try PostgresTestDatabase.require()
            let inMemory = InMemorySelfReportClient()
            await inMemory.issue(SelfReportStorageTests.otp)
            self.selfReports = selfReports ?? inMemory
            self.keys = PostgresDiagnosisKeyRepository(client: self.database.client, logger: self.database.logger)
            let runtime = SubmissionRuntime(
                configuration: try SubmissionFixture.configuration(overrides),
                dependencies: .inMemory(
                    verifier: self.verifier,
                    selfReports: self.selfReports,
                    keys: self.keys,
                    clock: WallClock { SubmissionPayloads.start }
                ),
                environment: .testing()
            )
            self.app = Application(router: try Submission.buildRouter(runtime))
        }

        func post(_ payload: SubmissionPayload, headers: HTTPFields) async throws -> RouterReply {
            try await self.app.post("/version/v1/diagnosis-keys", headers: headers, body: payload.bytes)
        }

        func count(_ table: String, where condition: String = "true") async throws -> Int {
            try await self.database.count(table, where: condition)
        }

        /// Whether the in-memory data-donation-service would still redeem `otp`.
        func isRedeemable(_ otp: String = SelfReportStorageTests.otp) async -> Bool {
            guard let client = self.selfReports as? InMemorySelfReportClient else { return false }
            return await client.isRedeemable(otp)
        }
    }

    @Test("a valid self-report stores its keys and one self_report_submissions row (UTC day), and is never federated")
    func stored() async throws {
        let harness = try await Harness()
        let payload = SelfReportTests.payload()
        #expect(payload.consentToFederation, "the keys would be federated if they were PCR keys")

        let reply = try await harness.post(payload, headers: SelfReportTests.headers())

        #expect(reply.status == .ok)
        #expect(reply.headers[SubmissionController.keysTruncatedHeader] == nil)
        #expect(try await harness.count("diagnosis_key", where: "submission_type = '\(Self.selfTest)'") == 14)
        // SubmissionPayloads.start is 2023-11-14 22:13:20 UTC.
        #expect(
            try await harness.count(
                "self_report_submissions",
                where: "submission_type = '\(Self.selfTest)' AND submission_date = DATE '2023-11-14'"
            ) == 1
        )
        #expect(try await harness.count("self_report_submissions") == 1)
        #expect(
            try await harness.count(
                "self_reports",
                where: "count = 1 AND submission_type = '\(Self.selfTest)' AND submission_date = DATE '2023-11-14'"
            ) == 1
        )
        #expect(try await harness.count("federation_upload_key") == 0)
        #expect(await !harness.isRedeemable())

        // Distribution's read of the store selects by TRL and hour only: the self-reported keys are published.
        let published = try await harness.keys.withPublicationRun { run in
            try await run.keys(minimumTRL: 3, fromHour: 0)
        }
        let keyData = Set(payload.keys.map { Array($0.keyData) })
        #expect(published.map { Set($0.map { $0.keyData.bytes }) } == keyData)
    }

    @Test("an OTP data-donation-service refuses: 403, no key and no self-report row")
    func otpRejected() async throws {
        let harness = try await Harness()
        let reply = try await harness.post(
            SelfReportTests.payload(),
            headers: SelfReportTests.headers(otp: UUID().uuidString)
        )
        #expect(reply.status == .forbidden)
        #expect(try await harness.count("diagnosis_key") == 0)
        #expect(try await harness.count("self_report_submissions") == 0)
    }

    @Test("a key stored before under another type: 400 KEYS_ALREADY_EXIST, nothing stored, the OTP still usable")
    func keysAlreadyExist() async throws {
        let harness = try await Harness()
        await harness.verifier.issue(Self.tan)
        let pcr = SubmissionPayloads.payload(keys: 2)
        #expect(try await harness.post(pcr, headers: SubmissionPayloads.headers(tan: Self.tan)).status == .ok)

        var selfReport = SelfReportTests.payload()
        selfReport.keys[13] = pcr.keys[0]
        let reply = try await harness.post(selfReport, headers: SelfReportTests.headers())

        #expect(reply.status == .badRequest)
        #expect(reply.headers[SubmissionFailure.errorCodeHeader] == "KEYS_ALREADY_EXIST")
        #expect(await harness.isRedeemable())
        #expect(try await harness.count("diagnosis_key") == 2)
        #expect(try await harness.count("self_report_submissions") == 0)

        // The same self-report without the old key goes through with the same OTP.
        selfReport.keys[13] = SubmissionPayloads.key(daysAgo: 14)
        #expect(try await harness.post(selfReport, headers: SelfReportTests.headers()).status == .ok)
        #expect(try await harness.count("self_report_submissions") == 1)
    }

    @Test("today's keys at MAX_KEYS_PER_DAY: 429, nothing stored; yesterday's keys do not count")
    func dailyLimit() async throws {
        let harness = try await Harness(["MAX_KEYS_PER_DAY": "14"])
        // 20 keys submitted in the last hour of yesterday (UTC).
        let yesterday = Int64(SubmissionPayloads.start.timeIntervalSince1970) / 86_400 * 24 - 1
        let keys = (1...20).map { _ in (0..<16).map { _ in UInt8.random(in: 0...255) } }
        try await harness.database.storeKeys(.pcr(keys, hour: yesterday, rollingStart: 2_800_000))
        #expect(try await harness.post(SelfReportTests.payload(), headers: SelfReportTests.headers()).status == .ok)
        let second = "0f4e8a1c-5b2d-4c6e-8f9a-1b3c5d7e9f20"
        await (harness.selfReports as? InMemorySelfReportClient)?.issue(second)

        let reply = try await harness.post(SelfReportTests.payload(), headers: SelfReportTests.headers(otp: second))

        #expect(reply.status == .tooManyRequests)
        #expect(reply.headers[.retryAfter] == "6400")
        #expect(await harness.isRedeemable(second))
        #expect(try await harness.count("diagnosis_key") == 34)
        #expect(try await harness.count("self_report_submissions") == 1)
    }

    @Test("keys older than MAX_NUMBER_OF_DAYS_FOR_SRS are not stored; the answer carries cwa-keys-truncated")
    func truncated() async throws {
        let harness = try await Harness(["MAX_NUMBER_OF_DAYS_FOR_SRS": "3"])
        let reply = try await harness.post(SelfReportTests.payload(), headers: SelfReportTests.headers())
        #expect(reply.status == .ok)
        #expect(reply.headers[SubmissionController.keysTruncatedHeader] == "3")
        #expect(try await harness.count("diagnosis_key") == 3)
        #expect(try await harness.count("self_report_submissions") == 1)
    }

    @Test(
        "data-donation-service unreachable (the live HTTP client, a closed port): 503 with Retry-After, nothing stored"
    )
    func unreachable() async throws {
        var policy = UpstreamPolicy()
        policy.backoff = .milliseconds(1)
        policy.connectTimeout = .milliseconds(200)
        let client = HTTPSelfReportClient(
            baseURL: "http://127.0.0.1:9",
            policy: policy,
            serviceToken: TestServiceKeys.signer("submission-service"),
            logger: Logger(label: "test")
        )
        try await withCleanup {
            let harness = try await Harness(selfReports: client)
            let reply = try await harness.post(SelfReportTests.payload(), headers: SelfReportTests.headers())
            #expect(reply.status == .serviceUnavailable)
            #expect(reply.headers[.retryAfter] == "30")
            #expect(try await harness.count("diagnosis_key") == 0)
            #expect(try await harness.count("self_report_submissions") == 0)
        } cleanup: {
            try await client.shutdown()
        }
    }
}
