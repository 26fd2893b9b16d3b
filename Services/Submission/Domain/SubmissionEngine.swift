// A real submission, from payload bytes to stored rows: validate, prepare, verify the TAN or redeem the OTP, store
// (cwa-server §1.4).

import ENKeyStore
import ENModels
import ENPersistence
import ENServiceKit
import Foundation
import Logging
import SwiftProtobuf

/// The answer to a stored submission: the check-in counts of §1.3's headers, and for a self-report whose older keys
/// were dropped, the days it keeps.
struct SubmissionReceipt: Sendable, Equatable {
    var savedCheckIns: Int
    var filteredCheckIns: Int
    /// `MAX_NUMBER_OF_DAYS_FOR_SRS` when a self-report's keys were truncated to it (`cwa-keys-truncated`), else nil.
    var keysTruncatedToDays: Int? = nil
}

struct SubmissionEngine: Sendable {
    let policy: SubmissionPolicy
    let verifier: any VerificationClient
    let selfReports: any SelfReportClient
    let keys: any DiagnosisKeyRepository
    let clock: WallClock
    let metrics: SubmissionMetrics
    let logger: Logger
    let recovery: SubmissionRecovery

    /// Validates `body` for `endpoint` and `credential`, and only when it is valid, holds its rows, verifies (and so
    /// uses up) the TAN or redeems the OTP for this attempt, then stores everything in one transaction
    /// (`submitHeld`). A bad payload never burns a TAN or an OTP; one that fails verification stores nothing. A
    /// self-report is also refused before its OTP is redeemed when today's keys reached `MAX_KEYS_PER_DAY` (429) or
    /// when it holds keys stored before (400 `KEYS_ALREADY_EXIST`).
    func submit(
        _ endpoint: SubmissionEndpoint,
        body: some DataProtocol,
        credential: SubmissionCredential
    ) async throws(SubmissionFailure) -> SubmissionReceipt {
        // The controller refuses this already; checked here too because an OTP must never authorise a host warning.
        if endpoint == .onBehalf, case .otp = credential { throw .onBehalfNeedsTAN }
        let payload: SubmissionPayload
        do {
            payload = try SubmissionPayload(serializedBytes: Array(body))
        } catch {
            self.metrics.recordRejected(endpoint, rule: "protobuf")
            throw .unreadablePayload
        }
        let rules: [PayloadRule] =
            switch (endpoint, credential) {
            case (.onBehalf, _): PayloadRule.onBehalf
            case (.diagnosisKeys, .tan): PayloadRule.diagnosisKeys
            case (.diagnosisKeys, .otp): PayloadRule.selfReport
            }
        if let violation = PayloadRule.firstViolation(of: rules, in: payload, policy: self.policy) {
            self.metrics.recordRejected(endpoint, rule: violation.rule)
            self.logger.debug(
                "Submission payload rejected",
                metadata: [
                    "submission.rule": "\(violation.rule)", "submission.payload": "\(PrintablePayload(payload))",
                ]
            )
            throw .invalidPayload(violation)
        }
        let now = self.clock.now
        var random = SystemRandomNumberGenerator()
        let prepared = PreparedSubmission(payload: payload, policy: self.policy, now: now, using: &random)
        let spendable: SpendableCredential
        switch credential {
        case .tan(let header):
            guard let tan = TANHeader.parse(header) else {
                self.metrics.recordInvalidTAN(endpoint)
                throw .malformedTAN
            }
            spendable = .tan(tan, event: endpoint == .onBehalf)
        case .otp(let header):
            // The reference answers a malformed OTP with 400 (§1.3), unlike a malformed TAN (403).
            guard let otp = SubmissionCredential.parseOTP(header) else {
                self.metrics.recordInvalidOTP(reason: "malformed")
                throw .malformedOTP
            }
            spendable = .otp(otp)
        }
        let outcome = try await self.submitHeld(prepared.stored, credential: spendable, endpoint: endpoint)
        self.metrics.recordStored(outcome, dropped: prepared.droppedKeys, filtered: prepared.filteredCheckIns)
        if endpoint == .onBehalf { self.metrics.recordOnBehalf() }
        if prepared.selfReport != nil {
            self.metrics.recordSelfReport(type: prepared.submissionType, truncatedKeys: prepared.truncatedKeys)
        }
        self.logger.debug(
            "Submission stored",
            metadata: [
                "submission.payload": "\(PrintablePayload(payload))", "submission.keys.stored": "\(outcome.keys)",
                "submission.keys.dropped": "\(prepared.droppedKeys)",
                "submission.keys.truncated": "\(prepared.truncatedKeys)",
            ]
        )
        let saved = outcome.checkInsStored ? outcome.protectedReports + prepared.realTraceWarnings : 0
        return SubmissionReceipt(
            savedCheckIns: saved,
            filteredCheckIns: prepared.filteredCheckIns,
            keysTruncatedToDays: prepared.truncatedKeys > 0 ? self.policy.selfReportDays : nil
        )
    }

    /// Whole seconds from `now` to the next midnight UTC, when a new day's self-report count begins (at least 1).
    static func secondsToMidnight(after now: Date) -> Int {
        let day = 86_400
        return max(1, day - Int(now.timeIntervalSince1970.rounded(.down)) % day)
    }
}

/// What may be logged of a payload (cwa-server §1.12): counts and enum values, never key data, location ids or
/// padding bytes.
struct PrintablePayload: CustomStringConvertible {
    let payload: SubmissionPayload

    init(_ payload: SubmissionPayload) {
        self.payload = payload
    }

    /// The origin when it is a country code; anything else a client sent is not echoed into the log.
    private var origin: String {
        if self.payload.origin.isEmpty { return "-" }
        return CountryCode.isValid(self.payload.origin) ? self.payload.origin : "invalid"
    }

    var description: String {
        let keys = self.payload.keys.map { key in
            let trl = key.hasTransmissionRiskLevel ? "\(key.transmissionRiskLevel)" : "-"
            let dsos = key.hasDaysSinceOnsetOfSymptoms ? "\(key.daysSinceOnsetOfSymptoms)" : "-"
            return
                "{data: HIDDEN, trl: \(trl), rsin: \(key.rollingStartIntervalNumber), period: \(key.rollingPeriod), type: \(key.reportType.storageName ?? "?"), dsos: \(dsos)}"
        }
        return "type: \(self.payload.submissionType.storageName), origin: \(self.origin), "
            + "visited: \(self.payload.visitedCountries.count), consent: \(self.payload.consentToFederation), "
            + "padding: \(self.payload.requestPadding.count) bytes, checkIns: \(self.payload.checkIns.count), "
            + "protectedReports: \(self.payload.checkInProtectedReports.count), keys: [\(keys.joined(separator: ", "))]"
    }
}
