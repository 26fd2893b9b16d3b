// Self-report submissions (cwa-otp) on the router over recording fakes: headers, types, the checks before the OTP is
// redeemed, data-donation-service's answers (cwa-server §1.2–§1.8).

import ENKeyStore
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import SubmissionService

@Suite("Self-report submissions")
struct SelfReportTests {
    static let otp = "7b9c6a52-0d7e-4f3a-9c1e-2f5b8d4a6e10"
    static let tan = "3d7f1d8f-8f0e-4a43-9f0f-6d3c2b8c1a11"

    /// The headers of a real self-report (or, with `tan`, of a request carrying both).
    static func headers(otp: String = Self.otp, tan: String? = nil, fake: String = "0") -> HTTPFields {
        var headers = SubmissionPayloads.headers(tan: tan, fake: fake)
        headers[SubmissionController.otpHeader] = otp
        return headers
    }

    /// A valid self-report of `type`: 14 keys for the days before today.
    static func payload(_ type: SubmissionPayload.SubmissionType = .srsSelfTest) -> SubmissionPayload {
        SubmissionPayloads.payload(type: type)
    }

    /// The harness with `Self.otp` issued at data-donation-service.
    static func harness(_ overrides: [String: String] = [:]) async throws -> SubmissionRouterHarness {
        let harness = try SubmissionRouterHarness(overrides)
        await harness.selfReports.issue(Self.otp)
        return harness
    }

    static func metrics(_ harness: SubmissionRouterHarness) async throws -> String {
        try await harness.app.test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get).body.text
        }
    }

    @Test(
        "every self-report type with a valid OTP is stored with its self_report_submissions row; the OTP is redeemed",
        arguments: [
            SubmissionPayload.SubmissionType.srsSelfTest, .srsRegisteredRat, .srsUnregisteredRat, .srsRegisteredPcr,
            .srsUnregisteredPcr, .srsRapidPcr, .srsOther,
        ]
    )
    func stored(_ type: SubmissionPayload.SubmissionType) async throws {
        let harness = try await Self.harness()
        let reply = try await harness.post(Self.payload(type).bytes, headers: Self.headers())

        #expect(reply.status == .ok)
        #expect(reply.body.readableBytes == 0)
        #expect(reply.headers[SubmissionController.savedCheckInsHeader] == "000")
        #expect(reply.headers[SubmissionController.keysTruncatedHeader] == nil)
        let stored = try #require(harness.store.stored.withLock { $0.first })
        #expect(stored.submissionType == type.storageName)
        #expect(stored.keys.count == 14)
        #expect(stored.selfReport == SelfReportLimits(maxKeysPerDay: 1_000_000))
        let day = Int64(SubmissionPayloads.start.timeIntervalSince1970) / 86_400
        #expect(
            await harness.store.keys.storedSelfReports == [StoredSelfReport(submissionType: type.storageName, day: day)]
        )
        #expect(await harness.selfReports.calls == [Self.otp])
        #expect(await !harness.selfReports.isRedeemable(Self.otp))
        #expect(harness.verifier.calls.withLock { $0 } == 0)
        #expect(
            try await Self.metrics(harness).contains(
                #"en_submission_self_reports_total{type="\#(type.storageName)"} 1"#
            )
        )
    }

    @Test("an OTP is accepted in upper case and sent to data-donation-service in lower case")
    func upperCaseOTP() async throws {
        let harness = try await Self.harness()
        let reply = try await harness.post(Self.payload().bytes, headers: Self.headers(otp: Self.otp.uppercased()))
        #expect(reply.status == .ok)
        #expect(await harness.selfReports.calls == [Self.otp])
    }

    @Test("an OTP data-donation-service refuses (unknown or redeemed): 403, empty, nothing stored")
    func otpRejected() async throws {
        let harness = try await Self.harness()
        let unknown = try await harness.post(
            Self.payload().bytes,
            headers: Self.headers(otp: UUID().uuidString.lowercased())
        )
        #expect(unknown.status == .forbidden)
        #expect(unknown.body.readableBytes == 0)
        #expect(harness.store.stored.withLock { $0.isEmpty })
        #expect(await harness.store.keys.storedKeys.isEmpty)
        #expect(await harness.store.keys.storedSelfReports.isEmpty)

        // Used once, the OTP is refused the second time, even with other keys.
        #expect(try await harness.post(Self.payload().bytes, headers: Self.headers()).status == .ok)
        let reused = try await harness.post(Self.payload().bytes, headers: Self.headers())
        #expect(reused.status == .forbidden)
        #expect(harness.store.stored.withLock { $0.count } == 1)
        #expect(await harness.store.keys.storedSelfReports.count == 1)
        #expect(
            try await Self.metrics(harness).contains(#"en_submission_invalid_otp_total{reason="rejected"} 2"#)
        )
    }

    @Test("an OTP with a PCR or rapid-test type, or a host warning: 400, and the OTP is not sent anywhere")
    func otpWithTANType() async throws {
        let harness = try await Self.harness()
        for type in [SubmissionPayload.SubmissionType.pcrTest, .rapidTest, .hostWarning] {
            let reply = try await harness.post(Self.payload(type).bytes, headers: Self.headers())
            #expect(reply.status == .badRequest, "\(type)")
            #expect(reply.body.readableBytes == 0)
        }
        #expect(await harness.selfReports.calls.isEmpty)
        #expect(await harness.selfReports.isRedeemable(Self.otp))
        #expect(harness.store.stored.withLock { $0.isEmpty })
        #expect(
            try await Self.metrics(harness).contains(
                #"en_submission_rejected_total{endpoint="diagnosis_keys",rule="submission_type"} 3"#
            )
        )
    }

    @Test("a TAN with a self-report type: 400, and the TAN is not verified")
    func tanWithSelfReportType() async throws {
        let harness = try await Self.harness()
        for type in [SubmissionPayload.SubmissionType.srsSelfTest, .srsOther] {
            let reply = try await harness.post(
                Self.payload(type).bytes,
                headers: SubmissionPayloads.headers(tan: Self.tan)
            )
            #expect(reply.status == .badRequest)
        }
        #expect(harness.verifier.calls.withLock { $0 } == 0)
        #expect(await harness.selfReports.calls.isEmpty)
        #expect(harness.store.stored.withLock { $0.isEmpty })
    }

    @Test("both cwa-authorization and cwa-otp: 400, neither the TAN nor the OTP is used")
    func bothHeaders() async throws {
        let harness = try await Self.harness()
        for type in [SubmissionPayload.SubmissionType.srsSelfTest, .pcrTest] {
            let reply = try await harness.post(Self.payload(type).bytes, headers: Self.headers(tan: Self.tan))
            #expect(reply.status == .badRequest)
            #expect(reply.body.readableBytes == 0)
        }
        #expect(harness.verifier.calls.withLock { $0 } == 0)
        #expect(await harness.selfReports.calls.isEmpty)
        // An empty header counts as absent, as in the reference: the OTP alone is then used.
        var emptyTAN = Self.headers()
        emptyTAN[SubmissionController.authorizationHeader] = ""
        #expect(try await harness.post(Self.payload().bytes, headers: emptyTAN).status == .ok)
    }

    @Test(
        "an OTP that is not a UUID: 400, before data-donation-service is asked",
        arguments: ["TAN 7b9c6a52-0d7e-4f3a-9c1e-2f5b8d4a6e10", "7b9c6a520d7e4f3a9c1e2f5b8d4a6e10", "otp", "1-1-1-1-1"]
    )
    func malformedOTP(_ otp: String) async throws {
        let harness = try await Self.harness()
        let reply = try await harness.post(Self.payload().bytes, headers: Self.headers(otp: otp))
        #expect(reply.status == .badRequest)
        #expect(await harness.selfReports.calls.isEmpty)
        #expect(try await Self.metrics(harness).contains(#"en_submission_invalid_otp_total{reason="malformed"} 1"#))
    }

    @Test("a submission on behalf with cwa-otp instead of a TAN: 400")
    func onBehalfNeedsTAN() async throws {
        let harness = try await Self.harness()
        var payload = SubmissionPayloads.onBehalfPayload()
        payload.submissionType = .srsSelfTest
        for body in [SubmissionPayloads.onBehalfPayload(), payload] {
            let reply = try await harness.post(
                body.bytes,
                path: "/version/v1/submission-on-behalf",
                headers: Self.headers()
            )
            #expect(reply.status == .badRequest)
        }
        #expect(await harness.selfReports.calls.isEmpty)
        #expect(harness.verifier.calls.withLock { $0 } == 0)
    }

    @Test("keys stored before (here by a PCR submission): 400 with cwa-error-code KEYS_ALREADY_EXIST; OTP not redeemed")
    func keysAlreadyExist() async throws {
        let harness = try await Self.harness()
        let pcr = SubmissionPayloads.payload(keys: 3)
        #expect(try await harness.post(pcr.bytes, headers: SubmissionPayloads.headers(tan: Self.tan)).status == .ok)

        var selfReport = Self.payload()
        selfReport.keys[7] = pcr.keys[1]
        let reply = try await harness.post(selfReport.bytes, headers: Self.headers())

        #expect(reply.status == .badRequest)
        #expect(reply.headers[SubmissionFailure.errorCodeHeader] == "KEYS_ALREADY_EXIST")
        #expect(reply.body.readableBytes == 0)
        #expect(await harness.selfReports.calls.isEmpty)
        #expect(await harness.selfReports.isRedeemable(Self.otp))
        #expect(harness.store.stored.withLock { $0.count } == 1)
        #expect(await harness.store.keys.storedSelfReports.isEmpty)
        #expect(
            try await Self.metrics(harness).contains(
                #"en_submission_self_report_refused_total{reason="keys_exist"} 1"#
            )
        )
        // Other refusals carry no error code.
        let unknown = try await harness.post(
            Self.payload().bytes,
            headers: Self.headers(otp: UUID().uuidString)
        )
        #expect(unknown.status == .forbidden && unknown.headers[SubmissionFailure.errorCodeHeader] == nil)
    }

    @Test("today's keys (every type) at MAX_KEYS_PER_DAY: 429 with Retry-After until midnight UTC; OTP not redeemed")
    func dailyLimit() async throws {
        let harness = try await Self.harness(["MAX_KEYS_PER_DAY": "20"])
        // 14 PCR keys count too; the first self-report still finds 14 < 20 and brings the day to 28.
        let pcr = try await harness.post(
            SubmissionPayloads.payload().bytes,
            headers: SubmissionPayloads.headers(tan: Self.tan)
        )
        #expect(pcr.status == .ok)
        #expect(try await harness.post(Self.payload().bytes, headers: Self.headers()).status == .ok)
        let second = "0f4e8a1c-5b2d-4c6e-8f9a-1b3c5d7e9f20"
        await harness.selfReports.issue(second)

        let reply = try await harness.post(Self.payload().bytes, headers: Self.headers(otp: second))

        #expect(reply.status == .tooManyRequests)
        #expect(reply.body.readableBytes == 0)
        // SubmissionPayloads.start is 22:13:20 UTC: 6400 seconds before midnight.
        #expect(reply.headers[.retryAfter] == "6400")
        #expect(await harness.selfReports.isRedeemable(second))
        #expect(await harness.selfReports.calls == [Self.otp])
        #expect(await harness.store.keys.storedSelfReports.count == 1)
        #expect(
            try await Self.metrics(harness).contains(
                #"en_submission_self_report_refused_total{reason="daily_limit"} 1"#
            )
        )
        // TAN submissions have no daily cap.
        let later = try await harness.post(
            SubmissionPayloads.payload().bytes,
            headers: SubmissionPayloads.headers(tan: Self.tan)
        )
        #expect(later.status == .ok)
    }

    @Test("keys older than MAX_NUMBER_OF_DAYS_FOR_SRS are dropped, and the answer says cwa-keys-truncated: <days>")
    func truncated() async throws {
        let harness = try await Self.harness(["MAX_NUMBER_OF_DAYS_FOR_SRS": "5"])
        let reply = try await harness.post(Self.payload().bytes, headers: Self.headers())

        #expect(reply.status == .ok)
        #expect(reply.headers[SubmissionController.keysTruncatedHeader] == "5")
        // Keys of 1…14 days before today: those of days 1…5 stay.
        #expect(harness.store.stored.withLock { $0.first?.keys.count } == 5)
        #expect(try await Self.metrics(harness).contains("en_submission_keys_truncated_total 9"))

        // A TAN submission is never truncated by the self-report setting.
        let pcr = try await harness.post(
            SubmissionPayloads.payload().bytes,
            headers: SubmissionPayloads.headers(tan: Self.tan)
        )
        #expect(pcr.headers[SubmissionController.keysTruncatedHeader] == nil)
        #expect(harness.store.stored.withLock { $0.last?.keys.count } == 14)
    }

    @Test("with the defaults, keys beyond the retention window are dropped without cwa-keys-truncated")
    func retentionIsNotTruncation() async throws {
        let harness = try await Self.harness()
        var payload = Self.payload()
        payload.keys[0] = SubmissionPayloads.key(daysAgo: 15)
        let reply = try await harness.post(payload.bytes, headers: Self.headers())
        #expect(reply.status == .ok)
        #expect(reply.headers[SubmissionController.keysTruncatedHeader] == nil)
        #expect(harness.store.stored.withLock { $0.first?.keys.count } == 13)
    }

    @Test("data-donation-service unreachable: 503 with Retry-After, nothing stored")
    func unavailable() async throws {
        let harness = try await Self.harness()
        await harness.selfReports.setUnavailable(true)
        let reply = try await harness.post(Self.payload().bytes, headers: Self.headers())

        #expect(reply.status == .serviceUnavailable)
        #expect(reply.headers[.retryAfter] == "30")
        #expect(reply.body.readableBytes == 0)
        #expect(harness.store.stored.withLock { $0.isEmpty })
        #expect(await harness.store.keys.storedSelfReports.isEmpty)
        let unavailable = try await Self.metrics(harness).split(separator: "\n").filter {
            $0.hasPrefix("en_submission_unavailable_total{") && $0.contains(#"dependency="data_donation""#)
        }
        #expect(unavailable.count == 1 && unavailable.allSatisfy { $0.hasSuffix(" 1") }, "\(unavailable)")
    }

    @Test("a database down before the OTP is redeemed: 503 with Retry-After, and the OTP stays usable")
    func databaseDown() async throws {
        let harness = try SubmissionRouterHarness(databaseDown: true)
        await harness.selfReports.issue(Self.otp)
        let reply = try await harness.post(Self.payload().bytes, headers: Self.headers())
        #expect(reply.status == .serviceUnavailable)
        #expect(reply.headers[.retryAfter] == "30")
        #expect(await harness.selfReports.calls.isEmpty)
    }

    @Test("a dummy with cwa-otp redeems nothing and answers what a real self-report answers")
    func dummy() async throws {
        let harness = try await Self.harness()
        let real = try await harness.post(Self.payload().bytes, headers: Self.headers())
        let fake = try await harness.post(nil, headers: Self.headers(otp: UUID().uuidString, fake: "1"))
        #expect(await harness.selfReports.calls == [Self.otp])
        #expect(harness.store.stored.withLock { $0.count } == 1)
        let names = { (reply: Reply) in
            reply.headers.filter { $0.name != .init("x-request-id")! }.map { "\($0.name): \($0.value)" }.sorted()
        }
        #expect(real.status == .ok && fake.status == .ok)
        #expect(names(fake) == names(real))
    }

    @Test("seconds to midnight UTC: at least 1, a whole day at midnight")
    func secondsToMidnight() {
        #expect(SubmissionEngine.secondsToMidnight(after: Date(timeIntervalSince1970: 86_400)) == 86_400)
        #expect(SubmissionEngine.secondsToMidnight(after: Date(timeIntervalSince1970: 86_399.5)) == 1)
        #expect(SubmissionEngine.secondsToMidnight(after: SubmissionPayloads.start) == 6_400)
    }
}
