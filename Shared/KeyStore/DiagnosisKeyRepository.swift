// The `keys` database as the services use it, independent of the database behind it.

package import Foundation

/// Diagnosis keys and check-ins: submission writes them, distribution reads and prunes them. A submission is written
/// in three steps around the spending of its credential: `hold` its draft, spend the credential (naming the attempt),
/// `complete` it; an attempt whose answer or write was lost stays held and is completed later.
package protocol DiagnosisKeyRepository: Sendable {
    /// Holds `attempt` (its draft under its credential's hash, its times as given) in one round trip on a connection
    /// that is returned at once, before the credential is spent: a database outage fails here, with nothing spent.
    /// For a self-report (`selfReport` set), the same statement checks its limits against `keyData` and holds nothing
    /// when they refuse: its UTC day (of `dayStartHour`) already holds `maxKeysPerDay` keys, or any of its key data is
    /// stored under any type.
    func hold(
        _ attempt: HeldAttempt,
        selfReport: (limits: SelfReportLimits, dayStartHour: Int64, keyData: [[UInt8]])?
    ) async throws -> SelfReportRefusal?

    /// Writes `submission` and lets go of the attempt, and of every other attempt of the same credential (none of
    /// them spent it), in one transaction; `nil`, writing nothing, when the attempt is no longer held (a retry or
    /// the recovery completed it, or it was released). It waits for a connection as every request does: the attempt
    /// stays held when it fails, and a retry or the recovery completes it.
    ///
    /// On the key path a failing check-in write is rolled back alone and the keys still commit, because a
    /// check-in problem never fails a key submission (cwa-server §1.10); a submission of check-ins only fails
    /// with them. A key is skipped when the same key data exists as a PCR key (a PCR key is never overwritten
    /// by a rapid-test one) or with the same type. A self-report (`submission.selfReport` set) also writes a
    /// `self_report_submissions` row. Self-reports are never federated: the federation mirror takes PCR keys only.
    func complete(
        _ attempt: UUID,
        credentialHash: String,
        writing submission: KeySubmission
    ) async throws -> KeySubmissionOutcome?

    /// Stores `keys` downloaded from the federation gateway in `submissionHour` (hours since the epoch), in one
    /// statement, by the rule submissions follow: a key is skipped when the same key data exists as a PCR key.
    /// Returns how many were inserted.
    func storeFederated(_ keys: [FederatedKey], submissionHour: Int64) async throws -> Int

    /// Lets go of an attempt whose credential was refused, or that the recovery found without a spent credential.
    func release(_ attempt: UUID) async throws

    /// Sets when the recovery is to look at `attempt` again.
    func postpone(_ attempt: UUID, until due: Date) async throws

    /// Attempts of the credential kinds this version knows that are due at `now`, the longest due first, at most
    /// `limit`.
    func dueAttempts(at now: Date, limit: Int) async throws -> [HeldAttempt]

    /// The attempt `id` when it is still held.
    func heldAttempt(_ id: UUID) async throws -> HeldAttempt?

    /// How many attempts are held, of any kind, and since when the oldest.
    func heldAttemptCount() async throws -> HeldAttemptCount

    /// Runs `body` with the store to itself for a publication run: its reads and deletions commit together when
    /// `body` returns and are undone when it throws. Returns `nil` at once when another run holds the store.
    func withPublicationRun<Result: Sendable>(
        _ body: @Sendable (any KeyPublicationRun) async throws -> Result
    ) async throws -> Result?
}

/// What a publication run reads and deletes, inside its exclusive transaction.
package protocol KeyPublicationRun: Sendable {
    /// Deletes keys, check-in reports and warnings submitted before `hour`; federation's copies of the keys go
    /// with them.
    func deleteSubmitted(before hour: Int64) async throws -> KeyRetentionOutcome
    /// Deletes the self-report statistics rows (`self_report_submissions`) of days before `day` (days since the epoch,
    /// UTC); returns how many.
    func deleteSelfReports(before day: Int64) async throws -> Int
    /// Keys with at least `minimumTRL`, and every key of the NHS app, submitted in `fromHour` or later, in no
    /// particular order.
    func keys(minimumTRL: Int, fromHour: Int64) async throws -> [DistributionKey]
    /// Encrypted check-in reports submitted after `afterHour` and before `beforeHour`, in the order stored.
    func checkInReports(after afterHour: Int64, before beforeHour: Int64) async throws -> [StoredCheckInReport]
    /// Unencrypted check-ins submitted after `afterHour` and before `beforeHour`, in the order stored.
    func traceWarnings(after afterHour: Int64, before beforeHour: Int64) async throws -> [StoredTraceWarning]
}

/// Why `store(_:credential:authorize:)` wrote nothing.
package enum KeySubmissionFailure<Refusal: Error>: Error {
    /// The authorisation (the credential check) refused.
    case refused(Refusal)
    /// A self-report submission did not meet its limits; its authorisation did not run.
    case selfReportRefused(SelfReportRefusal)
    /// The database failed; `afterAuthorization` tells whether the credential was spent (the attempt then stays
    /// held, for a retry or the recovery to complete).
    case database(any Error, afterAuthorization: Bool)
}

extension DiagnosisKeyRepository {
    /// Holds, authorises and completes `submission` as one attempt of a `credential` whose SHA-256 is
    /// `credentialHash`: `authorize` gets the attempt's id and spends the credential for it. Nothing is written when
    /// `authorize` throws (the attempt is released); a write that fails after it leaves the attempt held.
    package func store<Refusal: Error>(
        _ submission: KeySubmission,
        credential: HeldCredential = .tan,
        credentialHash: String = HeldAttempt.unrelatedCredentialHash(),
        now: Date = Date(),
        authorize: (UUID) async throws(Refusal) -> Void
    ) async throws(KeySubmissionFailure<Refusal>) -> KeySubmissionOutcome {
        let attempt: HeldAttempt
        do {
            attempt = HeldAttempt(
                id: UUID(),
                credential: credential,
                credentialHash: credentialHash,
                draft: try submission.draft(),
                heldSince: now,
                due: now
            )
        } catch {
            throw .database(error, afterAuthorization: false)
        }
        let limits = submission.selfReport.map {
            (limits: $0, dayStartHour: submission.dayStartHour, keyData: submission.keys.map(\.keyData))
        }
        let refusal: SelfReportRefusal?
        do {
            refusal = try await self.hold(attempt, selfReport: limits)
        } catch {
            throw .database(error, afterAuthorization: false)
        }
        if let refusal { throw .selfReportRefused(refusal) }
        do {
            try await authorize(attempt.id)
        } catch {
            try? await self.release(attempt.id)
            throw .refused(error)
        }
        do {
            return try await self.complete(attempt.id, credentialHash: credentialHash, writing: submission)
                ?? KeySubmissionOutcome()
        } catch {
            throw .database(error, afterAuthorization: true)
        }
    }
}
