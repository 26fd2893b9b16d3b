// A submission written around the spending of its credential: held, spent for its attempt, completed; and the
// recovery of attempts whose answer or write was lost.

import ENCrypto
import ENKeyStore
import ENModels
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation
import Logging

/// A single-use credential, spent at its service for one submission attempt.
enum SpendableCredential: Sendable, Equatable {
    /// A TAN, for the key path (`event` false) or a submission on behalf (`event` true).
    case tan(String, event: Bool)
    /// A self-report's one-time password (a lower-case UUID).
    case otp(String)
    /// An NHS diagnosis key submission token (a lower-case UUID).
    case nhsToken(String)

    var kind: HeldCredential {
        switch self {
        case .tan: .tan
        case .otp: .otp
        case .nhsToken: .nhsToken
        }
    }

    /// The SHA-256 (lower-case hex) its spender stores it under: of the lower-case text (`TANHeader` lowercases a
    /// TAN as it reads it; an OTP and an NHS token are lowercased here).
    var hash: String {
        switch self {
        case .tan(let tan, _): SecretHash.sha256Hex(tan)
        case .otp(let otp): SecretHash.sha256Hex(otp.lowercased())
        case .nhsToken(let token): SecretHash.sha256Hex(token.lowercased())
        }
    }
}

/// What spending a credential granted: for an NHS token, the test kit of its result, which picks the rows' types.
struct SpendGrant: Sendable, Equatable {
    var nhsTestKit: NHSTestKit?

    /// `draft` with what the grant decides: an NHS submission's type and its keys' report type.
    func applied(to draft: KeySubmission) -> KeySubmission {
        guard draft.fromNHSApp, let kit = self.nhsTestKit else { return draft }
        var submission = draft
        submission.submissionType = NHSKeyPayload.submissionType(kit).storageName
        let reportType = NHSKeyPayload.reportType(kit)
        for index in submission.keys.indices { submission.keys[index].reportType = reportType }
        return submission
    }
}

/// How long an attempt may be held before the recovery resolves it, and how often the recovery runs.
struct RecoveryPolicy: Sendable, Equatable {
    /// An attempt held longer than this is no longer running: a request's database work ends at the 20 s deadline
    /// of `DatabaseDeadlineMiddleware`, so 30 s leave a margin. The ages are measured by the clock of the replica that
    /// held the attempt against that of the one that resolves it; their clocks agree to far better than the margin.
    var after: Duration = .seconds(30)
    /// An attempt whose credential is unspent is released only this long after it was held: until then, the spending
    /// may still be on its way (a request to the credential's service that timed out may yet commit there), and an
    /// attempt released before it lands would lose its keys.
    var releaseAfter: Duration = .seconds(600)
    var interval: Duration = .seconds(60)
    /// Attempts one pass resolves at most.
    var batch = 200

    init() {}

    init(settings: SettingsReader) {
        let defaults = RecoveryPolicy()
        self.after = settings.duration(
            "SUBMISSION_RECOVERY_AFTER",
            default: defaults.after,
            minimum: .seconds(1),
            help:
                "How long a submission may wait for its write after its TAN, OTP or token was spent before a retry or the recovery completes it; keep it above the 20 s database deadline of a request."
        )
        self.releaseAfter = max(
            self.after,
            settings.duration(
                "SUBMISSION_RELEASE_AFTER",
                default: defaults.releaseAfter,
                minimum: .seconds(1),
                help:
                    "How long a held submission whose TAN, OTP or token is unspent waits before the recovery lets it go; keep it above the longest a request to verification- or data-donation-service may take (at least SUBMISSION_RECOVERY_AFTER)."
            )
        )
        self.interval = settings.duration(
            "SUBMISSION_RECOVERY_INTERVAL",
            default: defaults.interval,
            minimum: .seconds(1),
            help: "How often held submissions are completed or released."
        )
    }
}

extension SubmissionEngine {
    /// Holds `draft`, spends `credential` for the attempt, and writes the draft with what the spending granted.
    ///
    /// - A database outage before the spending: 503, nothing spent (`storageUnavailable`).
    /// - The spender unreachable: 503 (`verificationUnavailable` / `selfReportVerificationUnavailable`); the attempt
    ///   stays held, since the credential may have been spent, and the recovery resolves it.
    /// - The credential refused: the attempt is released and the refusal thrown.
    /// - Spent by another attempt: that attempt, if it is held and no longer running, is completed now with its own
    ///   draft, and this call succeeds with it; otherwise (it may still run, or it was written) the credential counts
    ///   as used (`tanRejected`, `otpRejected`), the reference's answer, which is what each loser of a race gets.
    /// - The write failing after the spending: 503 (`storageFailedAfterVerification`); the attempt stays held, and a
    ///   retry after `RecoveryPolicy.after` or the recovery writes it.
    func submitHeld(
        _ draft: KeySubmission,
        credential: SpendableCredential,
        endpoint: SubmissionEndpoint
    ) async throws(SubmissionFailure) -> KeySubmissionOutcome {
        let attempt: HeldAttempt
        let now = self.clock.now
        do {
            attempt = HeldAttempt(
                id: UUID(),
                credential: credential.kind,
                credentialHash: credential.hash,
                draft: try draft.draft(),
                heldSince: now,
                due: now.addingTimeInterval(self.recovery.policy.after.timeInterval)
            )
        } catch {
            throw .unreadablePayload
        }
        let limits = draft.selfReport.map {
            (limits: $0, dayStartHour: draft.dayStartHour, keyData: draft.keys.map(\.keyData))
        }
        let refusal: SelfReportRefusal?
        do {
            refusal = try await self.keys.hold(attempt, selfReport: limits)
        } catch {
            self.metrics.recordUnavailable(endpoint, dependency: "database")
            self.logger.error("Submission not held", metadata: ErrorMetadata.of(error))
            throw .storageUnavailable
        }
        if let refusal { throw self.refused(refusal, draft: draft) }

        let grant: SpendGrant
        switch try await self.spend(credential, attempt: attempt.id, endpoint: endpoint) {
        case .granted(let granted):
            grant = granted
        case .refused(let failure):
            try? await self.keys.release(attempt.id)
            throw failure
        case .spentBy(let other):
            try? await self.keys.release(attempt.id)
            if let other, let outcome = try await self.recovery.completeIfAbandoned(other, endpoint: endpoint) {
                return outcome
            }
            throw self.usedCredential(credential, endpoint: endpoint)
        }
        var submission = grant.applied(to: draft)
        // Dated as of its write: the spending may have taken long enough for a publication run to close the hour the
        // request arrived in.
        submission.submissionHour = EpochIntervals.hour(self.clock.now)
        do {
            let outcome = try await self.keys.complete(
                attempt.id,
                credentialHash: attempt.credentialHash,
                writing: submission
            )
            // `nil`: a retry or the recovery wrote this attempt's draft already.
            return outcome ?? KeySubmissionOutcome()
        } catch {
            self.metrics.recordUnavailable(endpoint, dependency: "database_after_tan")
            self.logger.error("Submission held, not yet written", metadata: ErrorMetadata.of(error))
            throw .storageFailedAfterVerification(retryAfter: Int(self.recovery.policy.after.timeInterval) + 1)
        }
    }

    private enum Spent {
        case granted(SpendGrant)
        case refused(SubmissionFailure)
        case spentBy(UUID?)
    }

    /// Spends `credential` for `attempt` at its service; throws when the service cannot answer.
    private func spend(
        _ credential: SpendableCredential,
        attempt: UUID,
        endpoint: SubmissionEndpoint
    ) async throws(SubmissionFailure) -> Spent {
        switch credential {
        case .tan(let tan, let event):
            let verdict: TANVerdict
            do {
                // Verification-service consumes only a TAN of the kind the endpoint takes; the check below also
                // holds against one that ignores the request's `event` (the reference's).
                verdict = try await self.verifier.verify(tan, event: event, attempt: attempt)
            } catch {
                self.metrics.recordUnavailable(endpoint, dependency: "verification")
                throw .verificationUnavailable
            }
            // Spent for this very attempt (an answer repeated): the kind was checked when it was spent.
            if case .spentBy(let other) = verdict { return other == attempt ? .granted(SpendGrant()) : .spentBy(other) }
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
                return .refused(failure)
            }
            return .granted(SpendGrant())
        case .otp(let otp):
            let verdict: OTPVerdict
            do {
                verdict = try await self.selfReports.redeem(otp, attempt: attempt)
            } catch {
                self.metrics.recordUnavailable(endpoint, dependency: "data_donation")
                throw .selfReportVerificationUnavailable
            }
            switch verdict {
            case .valid: return .granted(SpendGrant())
            case .spentBy(let other): return other == attempt ? .granted(SpendGrant()) : .spentBy(other)
            case .rejected:
                self.metrics.recordInvalidOTP(reason: "rejected")
                return .refused(.otpRejected)
            }
        case .nhsToken(let token):
            let verdict: NHSTokenVerdict
            do {
                verdict = try await self.verifier.verifyNHSSubmissionToken(token, attempt: attempt)
            } catch {
                self.metrics.recordUnavailable(endpoint, dependency: "verification")
                throw .verificationUnavailable
            }
            switch verdict {
            case .valid(let kit): return .granted(SpendGrant(nhsTestKit: kit))
            case .spentBy(let other) where other == attempt:
                // Spent for this very attempt: the kit is the order's.
                let redemption: CredentialRedemption?
                do {
                    redemption = try await self.verifier.nhsTokenRedemption(hash: credential.hash)
                } catch {
                    self.metrics.recordUnavailable(endpoint, dependency: "verification")
                    throw .verificationUnavailable
                }
                guard let kit = redemption?.nhsTestKit else { throw .verificationUnavailable }
                return .granted(SpendGrant(nhsTestKit: kit))
            case .spentBy(let other): return .spentBy(other)
            case .rejected: return .refused(.tanRejected)
            }
        }
    }

    /// The refusal for a credential another attempt used, as for any used one.
    private func usedCredential(_ credential: SpendableCredential, endpoint: SubmissionEndpoint) -> SubmissionFailure {
        switch credential {
        case .tan:
            self.metrics.recordInvalidTAN(endpoint)
            return .tanRejected
        case .otp:
            self.metrics.recordInvalidOTP(reason: "rejected")
            return .otpRejected
        case .nhsToken:
            return .tanRejected
        }
    }

    private func refused(_ refusal: SelfReportRefusal, draft: KeySubmission) -> SubmissionFailure {
        switch refusal {
        case .dailyLimitReached:
            self.metrics.recordSelfReportRefused(reason: "daily_limit")
            // Debug only: once the cap is reached every self-report of the day hits it; the metric is the signal.
            self.logger.debug(
                "Self-report refused: today's keys reached MAX_KEYS_PER_DAY",
                metadata: ["submission.max_keys_per_day": "\(self.policy.maxKeysPerDay)"]
            )
            return .selfReportDailyLimitReached(retryAfter: Self.secondsToMidnight(after: self.clock.now))
        case .keysExist:
            self.metrics.recordSelfReportRefused(reason: "keys_exist")
            self.logger.debug("Self-report refused: it holds keys stored before")
            return .keysAlreadyExist
        }
    }
}

/// Resolves held attempts that are no longer running: the credential's service says which attempt spent it; that one
/// is written with its own draft, the others are released (an unspent credential's only after
/// `RecoveryPolicy.releaseAfter`). It runs periodically in every replica (two replicas resolving the same attempt write
/// it once: `complete` takes the attempt in its transaction), and for a retry whose credential an abandoned attempt
/// spent. An attempt it cannot resolve yet is postponed, so it never keeps the next ones waiting.
struct SubmissionRecovery: Sendable {
    let policy: RecoveryPolicy
    let keys: any DiagnosisKeyRepository
    let verifier: any VerificationClient
    let selfReports: any SelfReportClient
    let clock: WallClock
    let metrics: SubmissionMetrics
    let logger: Logger

    /// What a pass did.
    struct Outcome: Sendable, Equatable {
        /// Attempts written with their draft: their credential was spent for them.
        var completed = 0
        /// Attempts let go: their credential was spent by another attempt, or stayed unspent for
        /// `RecoveryPolicy.releaseAfter`.
        var released = 0
        /// Attempts let go because the credential's service no longer knows the credential (its record expired).
        var unconfirmed = 0
        /// Attempts whose credential is unspent, left until `RecoveryPolicy.releaseAfter`: its spending may be on
        /// its way.
        var waiting = 0
        /// Attempts left for a later pass: the credential's service could not answer, or the write failed.
        var deferred = 0
    }

    /// One pass over the attempts that are due.
    func run() async throws -> Outcome {
        let due = try await self.keys.dueAttempts(at: self.clock.now, limit: self.policy.batch)
        var outcome = Outcome()
        for attempt in due {
            switch await self.resolve(attempt) {
            case .completed: outcome.completed += 1
            case .released: outcome.released += 1
            case .unconfirmed: outcome.unconfirmed += 1
            case .waiting: outcome.waiting += 1
            case .deferred: outcome.deferred += 1
            }
        }
        self.metrics.recordRecovery(outcome, held: try? await self.keys.heldAttemptCount())
        return outcome
    }

    /// Completes attempt `id`, which its credential's service says spent the credential, when it is held and no longer
    /// running; its outcome, or `nil` when it is not held (written, released) or may still be running.
    func completeIfAbandoned(
        _ id: UUID,
        endpoint: SubmissionEndpoint
    ) async throws(SubmissionFailure) -> KeySubmissionOutcome? {
        let now = self.clock.now
        let held: HeldAttempt?
        do {
            held = try await self.keys.heldAttempt(id)
        } catch {
            self.metrics.recordUnavailable(endpoint, dependency: "database")
            throw .storageUnavailable
        }
        guard let held, held.heldSince < now.addingTimeInterval(-self.policy.after.timeInterval) else { return nil }
        switch await self.resolve(held) {
        case .completed(let outcome): return outcome
        case .released, .unconfirmed: return nil
        case .waiting, .deferred:
            throw .storageFailedAfterVerification(retryAfter: Int(self.policy.interval.timeInterval) + 1)
        }
    }

    enum Resolution: Sendable, Equatable {
        case completed(KeySubmissionOutcome)
        case released
        case unconfirmed
        case waiting
        case deferred
    }

    /// Asks the credential's service which attempt spent it, and writes, releases or postpones `attempt` by the
    /// answer.
    func resolve(_ attempt: HeldAttempt) async -> Resolution {
        let now = self.clock.now
        let redemption: CredentialRedemption?
        do {
            switch attempt.credential {
            case .tan: redemption = try await self.verifier.tanRedemption(hash: attempt.credentialHash)
            case .nhsToken: redemption = try await self.verifier.nhsTokenRedemption(hash: attempt.credentialHash)
            case .otp: redemption = try await self.selfReports.redemption(hash: attempt.credentialHash)
            }
        } catch {
            self.logger.warning(
                "Held submission not resolved: the credential's service is unavailable",
                metadata: ["credential": "\(attempt.credential.rawValue)"]
            )
            return await self.postpone(attempt, until: now.addingTimeInterval(self.policy.interval.timeInterval))
        }
        do {
            guard let redemption else {
                try await self.keys.release(attempt.id)
                self.logger.error(
                    "Held submission released: its credential is no longer known",
                    metadata: ["credential": "\(attempt.credential.rawValue)"]
                )
                return .unconfirmed
            }
            guard redemption.redeemed else {
                let release = attempt.heldSince.addingTimeInterval(self.policy.releaseAfter.timeInterval)
                guard release <= now else {
                    try await self.keys.postpone(attempt.id, until: release)
                    return .waiting
                }
                try await self.keys.release(attempt.id)
                return .released
            }
            guard redemption.redeemedBy == attempt.id else {
                try await self.keys.release(attempt.id)
                return .released
            }
            return try await self.complete(attempt, redemption: redemption)
        } catch {
            self.logger.warning("Held submission not resolved", metadata: ErrorMetadata.of(error))
            return await self.postpone(attempt, until: now.addingTimeInterval(self.policy.interval.timeInterval))
        }
    }

    /// Writes `attempt`, whose credential was spent for it.
    private func complete(_ attempt: HeldAttempt, redemption: CredentialRedemption) async throws -> Resolution {
        let draft: KeySubmission
        do {
            draft = try KeySubmission(draft: attempt.draft)
        } catch {
            // Written by a version that encodes drafts differently: left for it, or for an operator.
            self.logger.error(
                "Held submission not resolved: its draft cannot be read",
                metadata: ErrorMetadata.of(error)
            )
            return await self.postpone(
                attempt,
                until: self.clock.now.addingTimeInterval(self.policy.releaseAfter.timeInterval)
            )
        }
        if attempt.credential == .nhsToken, redemption.nhsTestKit == nil {
            // The kit decides the rows' types; verification-service names it for every submitted order.
            self.logger.error("Held submission not resolved: its NHS order names no test kit")
            return await self.postpone(
                attempt,
                until: self.clock.now.addingTimeInterval(self.policy.interval.timeInterval)
            )
        }
        var submission = SpendGrant(nhsTestKit: redemption.nhsTestKit).applied(to: draft)
        // Stored now, so as of now: a run may have published the draft's hour (and its day) meanwhile, and a key
        // dated into a published period would reach no phone.
        submission.submissionHour = EpochIntervals.hour(self.clock.now)
        guard
            let outcome = try await self.keys.complete(
                attempt.id,
                credentialHash: attempt.credentialHash,
                writing: submission
            )
        else { return .released }
        self.metrics.recordStored(outcome, dropped: 0, filtered: 0)
        self.logger.notice(
            "Held submission completed",
            metadata: ["credential": "\(attempt.credential.rawValue)", "submission.keys.stored": "\(outcome.keys)"]
        )
        return .completed(outcome)
    }

    /// Leaves `attempt` for the pass at `due` or after; `.deferred` either way (a failed postponement leaves it due).
    private func postpone(_ attempt: HeldAttempt, until due: Date) async -> Resolution {
        do {
            try await self.keys.postpone(attempt.id, until: due)
        } catch {
            self.logger.warning("Held submission not postponed", metadata: ErrorMetadata.of(error))
        }
        return .deferred
    }
}
