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

    /// Validates `body` for `endpoint` and `credential`, and only when it is valid, verifies (and so uses up) the
    /// TAN or redeems the OTP, then stores everything in one transaction. A bad payload never burns a TAN or an OTP;
    /// one that fails verification stores nothing. A self-report is also refused before its OTP is redeemed when
    /// today's keys reached `MAX_KEYS_PER_DAY` (429) or when it holds keys stored before (400 `KEYS_ALREADY_EXIST`).
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
        let outcome: KeySubmissionOutcome
        switch credential {
        case .tan(let header):
            guard let tan = TANHeader.parse(header) else {
                self.metrics.recordInvalidTAN(endpoint)
                throw .malformedTAN
            }
            outcome = try await self.store(endpoint, prepared, now: now) { () async throws(SubmissionFailure) in
                try await self.authorize(endpoint, tan: tan)
            }
        case .otp(let header):
            // The reference answers a malformed OTP with 400 (§1.3), unlike a malformed TAN (403).
            guard let otp = SubmissionCredential.parseOTP(header) else {
                self.metrics.recordInvalidOTP(reason: "malformed")
                throw .malformedOTP
            }
            outcome = try await self.store(endpoint, prepared, now: now) { () async throws(SubmissionFailure) in
                try await self.redeem(otp)
            }
        }
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

    /// Stores `prepared` once `authorize` (the TAN check or the OTP redemption) succeeded, and turns the key store's
    /// refusals into the answers of §1.3.
    private func store(
        _ endpoint: SubmissionEndpoint,
        _ prepared: PreparedSubmission,
        now: Date,
        authorize: () async throws(SubmissionFailure) -> Void
    ) async throws(SubmissionFailure) -> KeySubmissionOutcome {
        do {
            return try await self.keys.store(prepared.stored, authorize: authorize)
        } catch {
            switch error {
            case .refused(let failure):
                throw failure
            case .selfReportRefused(.dailyLimitReached):
                self.metrics.recordSelfReportRefused(reason: "daily_limit")
                // Debug only: once the cap is reached every self-report of the day hits it; the metric is the signal.
                self.logger.debug(
                    "Self-report refused: today's keys reached MAX_KEYS_PER_DAY",
                    metadata: ["submission.max_keys_per_day": "\(self.policy.maxKeysPerDay)"]
                )
                throw .selfReportDailyLimitReached(retryAfter: Self.secondsToMidnight(after: now))
            case .selfReportRefused(.keysExist):
                self.metrics.recordSelfReportRefused(reason: "keys_exist")
                self.logger.debug("Self-report refused: it holds keys stored before")
                throw .keysAlreadyExist
            case .database(let cause, let afterAuthorization):
                self.metrics.recordUnavailable(
                    endpoint,
                    dependency: afterAuthorization ? "database_after_tan" : "database"
                )
                self.logger.error("Submission not stored", metadata: ErrorMetadata.of(cause))
                throw afterAuthorization ? .storageFailedAfterVerification : .storageUnavailable
            }
        }
    }

    /// Whole seconds from `now` to the next midnight UTC, when a new day's self-report count begins (at least 1).
    static func secondsToMidnight(after now: Date) -> Int {
        let day = 86_400
        return max(1, day - Int(now.timeIntervalSince1970.rounded(.down)) % day)
    }
}

extension SubmissionEngine {
    /// Redeems (and so uses up) a self-report's `otp` at data-donation-service.
    func redeem(_ otp: String) async throws(SubmissionFailure) {
        let verdict: OTPVerdict
        do {
            verdict = try await self.selfReports.redeem(otp)
        } catch {
            self.metrics.recordUnavailable(.diagnosisKeys, dependency: "data_donation")
            throw .selfReportVerificationUnavailable
        }
        guard verdict == .valid else {
            self.metrics.recordInvalidOTP(reason: "rejected")
            throw .otpRejected
        }
    }

    /// Verifies (and so uses up) `tan`, and checks that its kind fits `endpoint`: an event teleTAN's TAN is for
    /// submissions on behalf only, and those need one.
    func authorize(_ endpoint: SubmissionEndpoint, tan: String) async throws(SubmissionFailure) {
        let verdict: TANVerdict
        do {
            // Verification-service consumes only a TAN of the kind the endpoint takes; the check below also holds
            // against one that ignores the request's `event` (the reference's).
            verdict = try await self.verifier.verify(tan, event: endpoint == .onBehalf)
        } catch {
            self.metrics.recordUnavailable(endpoint, dependency: "verification")
            throw .verificationUnavailable
        }
        let failure: SubmissionFailure? =
            switch (endpoint, verdict) {
            case (_, .rejected): .tanRejected
            case (.diagnosisKeys, .wrongKind): .eventTANNotAllowed
            case (.onBehalf, .wrongKind): .eventTANRequired
            case (.diagnosisKeys, _) where verdict.isEventTAN: .eventTANNotAllowed
            case (.onBehalf, _) where !verdict.isEventTAN: .eventTANRequired
            default: nil
            }
        if let failure {
            self.metrics.recordInvalidTAN(endpoint)
            throw failure
        }
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
