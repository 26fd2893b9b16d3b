// One rejected payload per validation rule, in the reference's order, and what a rejection does not do.

import ENKeyStore
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import SubmissionService

@Suite("Payload rules")
struct PayloadRuleTests {
    /// A rule's name and a change that breaks only that rule in a valid key submission.
    struct Breach: Sendable, CustomTestStringConvertible {
        let rule: String
        let breakIt: @Sendable (inout SubmissionPayload) -> Void
        var testDescription: String { self.rule }
    }

    static let keyBreaches: [Breach] = [
        Breach(rule: "rolling_start_at_midnight") { $0.keys[0].rollingStartIntervalNumber += 1 },
        Breach(rule: "key_count") { $0.keys = [] },
        Breach(rule: "key_count") { $0.keys += [SubmissionPayloads.key()] },
        Breach(rule: "origin") { $0.origin = "FR" },
        Breach(rule: "visited_countries") { $0.visitedCountries = ["FR", "US"] },
        Breach(rule: "risk_or_onset") { $0.keys[3].clearTransmissionRiskLevel() },
        Breach(rule: "transmission_risk_level") { $0.keys[2].transmissionRiskLevel = 9 },
        Breach(rule: "transmission_risk_level") { $0.keys[2].transmissionRiskLevel = 0 },
        Breach(rule: "days_since_onset") { $0.keys[1].daysSinceOnsetOfSymptoms = -16 },
        Breach(rule: "days_since_onset") { $0.keys[1].daysSinceOnsetOfSymptoms = 4001 },
        Breach(rule: "check_ins") { $0.checkIns = [SubmissionPayloads.checkIn(trl: 9)] },
        Breach(rule: "check_ins") {
            var checkIn = SubmissionPayloads.checkIn()
            checkIn.locationID = Data(count: 31)
            $0.checkIns = [checkIn]
        },
        Breach(rule: "check_ins") {
            var checkIn = SubmissionPayloads.checkIn()
            checkIn.endIntervalNumber = checkIn.startIntervalNumber - 1
            $0.checkIns = [checkIn]
        },
        Breach(rule: "check_in_protected_reports") {
            var report = SubmissionPayloads.protectedReport()
            report.iv = Data(count: 32)
            $0.checkInProtectedReports = [report]
        },
        Breach(rule: "check_in_protected_reports") {
            var report = SubmissionPayloads.protectedReport()
            report.encryptedCheckInRecord = Data(count: 17)
            $0.checkInProtectedReports = [report]
        },
        Breach(rule: "rolling_period") { $0.keys[0].rollingPeriod = 0 },
        Breach(rule: "rolling_period") { $0.keys[0].rollingPeriod = 145 },
        Breach(rule: "submission_type") { $0.submissionType = .hostWarning },
        Breach(rule: "submission_type") { $0.submissionType = .srsSelfTest },
        Breach(rule: "key_length") { $0.keys[5].keyData = Data(count: 15) },
        Breach(rule: "positive_rolling_start") { $0.keys[0].rollingStartIntervalNumber = 0 },
        Breach(rule: "report_type") { $0.keys[0].reportType = .UNRECOGNIZED(9) },
    ]

    static let onBehalfBreaches: [Breach] = [
        Breach(rule: "on_behalf_no_keys") { $0.keys = [SubmissionPayloads.key()] },
        Breach(rule: "on_behalf_no_visited_countries") { $0.visitedCountries = ["DE"] },
        Breach(rule: "on_behalf_no_consent") { $0.consentToFederation = true },
        Breach(rule: "on_behalf_submission_type") { $0.submissionType = .pcrTest },
        Breach(rule: "on_behalf_one_location") {
            $0.checkIns = [SubmissionPayloads.checkIn(location: 1), SubmissionPayloads.checkIn(location: 2)]
        },
        Breach(rule: "on_behalf_reports_present") { $0.checkInProtectedReports = [] },
        Breach(rule: "on_behalf_one_location_hash") {
            $0.checkInProtectedReports.append(SubmissionPayloads.protectedReport(location: 3))
        },
        Breach(rule: "check_ins") { $0.checkIns = [SubmissionPayloads.checkIn(trl: 0)] },
        Breach(rule: "check_in_protected_reports") { $0.checkInProtectedReports[1].mac = Data(count: 31) },
    ]

    @Test("valid payloads break no rule")
    func validPayloads() {
        let policy = try! SubmissionFixture.configuration().policy
        #expect(
            PayloadRule.firstViolation(of: PayloadRule.diagnosisKeys, in: SubmissionPayloads.payload(), policy: policy)
                == nil
        )
        #expect(
            PayloadRule.firstViolation(
                of: PayloadRule.onBehalf,
                in: SubmissionPayloads.onBehalfPayload(),
                policy: policy
            ) == nil
        )
        var minimal = SubmissionPayloads.payload(keys: 1)
        minimal.clearOrigin()
        minimal.visitedCountries = []
        minimal.keys[0].clearTransmissionRiskLevel()
        minimal.keys[0].daysSinceOnsetOfSymptoms = 0
        #expect(PayloadRule.firstViolation(of: PayloadRule.diagnosisKeys, in: minimal, policy: policy) == nil)
    }

    @Test("a key submission breaking one rule answers 400, stores nothing and verifies no TAN", arguments: keyBreaches)
    func keyRule(_ breach: Breach) async throws {
        var payload = SubmissionPayloads.payload()
        breach.breakIt(&payload)
        let policy = try SubmissionFixture.configuration().policy
        #expect(
            PayloadRule.firstViolation(of: PayloadRule.diagnosisKeys, in: payload, policy: policy)?.rule == breach.rule
        )

        let harness = try SubmissionRouterHarness()
        let reply = try await harness.post(payload.bytes, headers: SubmissionPayloads.headers(tan: UUID().uuidString))
        #expect(reply.status == .badRequest)
        #expect(reply.body.readableBytes == 0)
        #expect(harness.verifier.calls.withLock { $0 } == 0)
        #expect(harness.store.stored.withLock { $0.isEmpty })
    }

    @Test(
        "a submission on behalf breaking one rule answers 400, stores nothing and verifies no TAN",
        arguments: onBehalfBreaches
    )
    func onBehalfRule(_ breach: Breach) async throws {
        var payload = SubmissionPayloads.onBehalfPayload()
        breach.breakIt(&payload)
        let policy = try SubmissionFixture.configuration().policy
        #expect(PayloadRule.firstViolation(of: PayloadRule.onBehalf, in: payload, policy: policy)?.rule == breach.rule)

        let harness = try SubmissionRouterHarness(verdict: .valid(teleTANType: "EVENT"))
        let reply = try await harness.post(
            payload.bytes,
            path: "/version/v1/submission-on-behalf",
            headers: SubmissionPayloads.headers(tan: UUID().uuidString)
        )
        #expect(reply.status == .badRequest)
        #expect(harness.verifier.calls.withLock { $0 } == 0)
        #expect(harness.store.stored.withLock { $0.isEmpty })
    }

    @Test("rules are checked in the reference's order: the earlier rule is reported")
    func order() throws {
        var payload = SubmissionPayloads.payload()
        payload.keys[0].rollingStartIntervalNumber += 1
        payload.keys[1].transmissionRiskLevel = 9
        payload.origin = "FR"
        let policy = try SubmissionFixture.configuration().policy
        #expect(
            PayloadRule.firstViolation(of: PayloadRule.diagnosisKeys, in: payload, policy: policy)?.rule
                == "rolling_start_at_midnight"
        )
        payload.keys[0].rollingStartIntervalNumber -= 1
        #expect(
            PayloadRule.firstViolation(of: PayloadRule.diagnosisKeys, in: payload, policy: policy)?.rule == "origin"
        )
    }

    @Test("a rejected rule is counted under its name in the metrics")
    func rejectionMetric() async throws {
        let harness = try SubmissionRouterHarness()
        var payload = SubmissionPayloads.payload()
        payload.origin = "NL"
        _ = try await harness.post(payload.bytes, headers: SubmissionPayloads.headers(tan: UUID().uuidString))
        let text = try await harness.app.test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get).body.text
        }
        #expect(text.contains(#"en_submission_rejected_total{endpoint="diagnosis_keys",rule="origin"} 1"#))
    }
}
