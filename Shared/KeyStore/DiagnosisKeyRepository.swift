// The `keys` database as the services use it, independent of the database behind it.

/// Diagnosis keys and check-ins: submission writes them, distribution reads and prunes them.
package protocol DiagnosisKeyRepository: Sendable {
    /// Opens a transaction (so a database outage fails before anything is spent), runs `authorize` (the TAN
    /// check) in it, then writes `submission` and commits. Nothing is written when `authorize` throws.
    ///
    /// On the key path a failing check-in write is rolled back alone and the keys still commit, because a
    /// check-in problem never fails a key submission (cwa-server §1.10); a submission of check-ins only fails
    /// with them. A key is skipped when the same key data exists as a PCR key (a PCR key is never overwritten
    /// by a rapid-test one) or with the same type.
    ///
    /// A self-report (`submission.selfReport` set) is refused before `authorize` runs when its UTC day already holds
    /// `maxKeysPerDay` keys, or when any of its key data is stored under any type; otherwise a
    /// `self_report_submissions` row is written with its keys. Self-reports are never federated: the federation
    /// mirror takes PCR keys only.
    func store<Refusal: Error>(
        _ submission: KeySubmission,
        authorize: () async throws(Refusal) -> Void
    ) async throws(KeySubmissionFailure<Refusal>) -> KeySubmissionOutcome

    /// As `store(_:authorize:)`, for a submission whose rows depend on what the authorisation says (an NHS
    /// submission token names the test kit, which picks the report type): `authorize` returns the submission to write.
    /// It must not be a self-report (`selfReport` nil): its limits could not be checked before the authorisation.
    func store<Refusal: Error>(
        authorizing authorize: () async throws(Refusal) -> KeySubmission
    ) async throws(KeySubmissionFailure<Refusal>) -> KeySubmissionOutcome

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
