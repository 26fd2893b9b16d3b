// The `keys` database in memory, for route tests and runs without PostgreSQL.

package import Foundation

/// Keeps keys and check-ins in memory with the rules of the PostgreSQL repository: the schema's checks (a row the
/// tables would refuse fails the whole submission, after its authorisation), a key stored once per type and never
/// beside a PCR key of the same data, an encrypted check-in once, check-ins read in the order stored; one publication
/// run at a time, whose deletions are put back in their places when it fails.
package struct InMemoryDiagnosisKeyRepository: DiagnosisKeyRepository {
    private let state = InMemoryKeyState()

    package init() {}

    package func hold(
        _ attempt: HeldAttempt,
        selfReport: (limits: SelfReportLimits, dayStartHour: Int64, keyData: [[UInt8]])?
    ) async throws -> SelfReportRefusal? {
        await self.state.hold(attempt, selfReport: selfReport)
    }

    package func complete(
        _ attempt: UUID,
        credentialHash: String,
        writing submission: KeySubmission
    ) async throws -> KeySubmissionOutcome? {
        try await self.state.complete(attempt, credentialHash: credentialHash, writing: submission)
    }

    package func storeFederated(_ keys: [FederatedKey], submissionHour: Int64) async throws -> Int {
        try await self.state.insertFederated(keys, submissionHour: submissionHour)
    }

    package func release(_ attempt: UUID) async throws {
        await self.state.release(attempt)
    }

    package func postpone(_ attempt: UUID, until due: Date) async throws {
        await self.state.postpone(attempt, until: due)
    }

    package func dueAttempts(at now: Date, limit: Int) async throws -> [HeldAttempt] {
        Array(await self.state.heldAttempts.filter { $0.due <= now }.sorted { $0.due < $1.due }.prefix(limit))
    }

    package func heldAttempt(_ id: UUID) async throws -> HeldAttempt? {
        await self.state.heldAttempts.first { $0.id == id }
    }

    package func heldAttemptCount() async throws -> HeldAttemptCount {
        let held = await self.state.heldAttempts
        return HeldAttemptCount(count: held.count, oldest: held.map(\.heldSince).min())
    }

    package func withPublicationRun<Result: Sendable>(
        _ body: @Sendable (any KeyPublicationRun) async throws -> Result
    ) async throws -> Result? {
        guard await self.state.beginRun() else { return nil }
        let run = InMemoryKeyPublicationRun(state: self.state)
        do {
            let result = try await body(run)
            await self.state.endRun(restoring: nil)
            return result
        } catch {
            await self.state.endRun(restoring: await run.deleted)
            throw error
        }
    }

    /// Every stored key, for tests.
    package var storedKeys: [StoredKey] {
        get async { await self.state.keys }
    }

    /// The rows of `self_report_submissions`: type and UTC day (days since the epoch), for tests.
    package var storedSelfReports: [StoredSelfReport] {
        get async { await self.state.selfReports }
    }
}

/// A row of `self_report_submissions`.
package struct StoredSelfReport: Sendable, Equatable {
    package var submissionType: String
    /// Days since the epoch (UTC).
    package var day: Int64

    package init(submissionType: String, day: Int64) {
        self.submissionType = submissionType
        self.day = day
    }
}

/// A key with the fields of its submission, as the repository holds it.
package struct StoredKey: Sendable, Equatable {
    package var row: DiagnosisKeyRow
    package var submissionType: String
    package var submissionHour: Int64
    package var originCountry: String
    package var visitedCountries: [String]
    package var consentToFederation: Bool
    package var fromNHSApp: Bool = false
}

/// An encrypted check-in with its place in the table (the identity column's order) and its hour.
struct StoredReport: Sendable {
    var id: Int
    var row: ProtectedReportRow
    var hour: Int64
}

/// An unencrypted check-in with its place in the table, its hour and its submission's type.
struct StoredWarning: Sendable {
    var id: Int
    var row: TraceWarningRow
    var hour: Int64
    var type: String
}

/// What a publication run deleted, so that a failed run can put it back.
struct DeletedRows: Sendable {
    var keys: [StoredKey] = []
    var reports: [StoredReport] = []
    var warnings: [StoredWarning] = []
    var selfReports: [StoredSelfReport] = []
}

/// A row the PostgreSQL schema's checks would refuse.
struct KeyStoreConstraintViolation: Error, CustomStringConvertible {
    let description: String
}

/// The rows, behind an actor so that every insert and deletion is atomic.
actor InMemoryKeyState {
    private(set) var keys: [StoredKey] = []
    private(set) var selfReports: [StoredSelfReport] = []
    /// Attempts held while their credential is spent, in the order held.
    private(set) var heldAttempts: [HeldAttempt] = []
    private var reports: [StoredReport] = []
    private var warnings: [StoredWarning] = []
    private var lastID = 0
    private var running = false

    /// A self-report's limits, checked before its authorisation as the PostgreSQL repository does.
    func hold(
        _ attempt: HeldAttempt,
        selfReport: (limits: SelfReportLimits, dayStartHour: Int64, keyData: [[UInt8]])?
    ) -> SelfReportRefusal? {
        if let selfReport {
            if self.keys.count(where: { $0.submissionHour >= selfReport.dayStartHour })
                >= selfReport.limits.maxKeysPerDay
            {
                return .dailyLimitReached
            }
            let submitted = Set(selfReport.keyData)
            if self.keys.contains(where: { submitted.contains($0.row.keyData) }) { return .keysExist }
        }
        self.heldAttempts.append(attempt)
        return nil
    }

    func complete(
        _ attempt: UUID,
        credentialHash: String,
        writing submission: KeySubmission
    ) throws -> KeySubmissionOutcome? {
        guard self.heldAttempts.contains(where: { $0.id == attempt }) else { return nil }
        let outcome = try self.insert(submission)
        self.heldAttempts.removeAll { $0.id == attempt || $0.credentialHash == credentialHash }
        return outcome
    }

    func release(_ attempt: UUID) {
        self.heldAttempts.removeAll { $0.id == attempt }
    }

    func postpone(_ attempt: UUID, until due: Date) {
        for index in self.heldAttempts.indices where self.heldAttempts[index].id == attempt {
            self.heldAttempts[index].due = due
        }
    }

    func insert(_ submission: KeySubmission) throws -> KeySubmissionOutcome {
        try Self.check(submission)
        if submission.selfReport != nil {
            self.selfReports.append(
                StoredSelfReport(submissionType: submission.submissionType, day: submission.submissionHour / 24)
            )
        }
        var outcome = KeySubmissionOutcome()
        outcome.keys = self.insert(
            submission.keys.map {
                StoredKey(
                    row: $0,
                    submissionType: submission.submissionType,
                    submissionHour: submission.submissionHour,
                    originCountry: submission.originCountry,
                    visitedCountries: submission.visitedCountries,
                    consentToFederation: submission.consentToFederation,
                    fromNHSApp: submission.fromNHSApp
                )
            }
        )
        for report in submission.protectedReports where !self.reports.contains(where: { $0.row == report }) {
            self.lastID += 1
            self.reports.append(StoredReport(id: self.lastID, row: report, hour: submission.submissionHour))
            outcome.protectedReports += 1
        }
        for warning in submission.traceWarnings {
            self.lastID += 1
            self.warnings.append(
                StoredWarning(
                    id: self.lastID,
                    row: warning,
                    hour: submission.submissionHour,
                    type: submission.submissionType
                )
            )
            outcome.traceWarnings += 1
        }
        return outcome
    }

    /// Federated keys, all or none: a key the tables would refuse fails them all, as the one statement does.
    func insertFederated(_ keys: [FederatedKey], submissionHour: Int64) throws -> Int {
        let rows = keys.map {
            StoredKey(
                row: $0.row,
                submissionType: FederatedKey.submissionType,
                submissionHour: submissionHour,
                originCountry: $0.originCountry,
                visitedCountries: $0.visitedCountries,
                consentToFederation: false
            )
        }
        for row in rows { try Self.check(row) }
        return self.insert(rows)
    }

    /// The one insertion of keys: a key is skipped when the same key data is stored with its type or as a PCR key.
    private func insert(_ rows: [StoredKey]) -> Int {
        var inserted = 0
        for row in rows {
            let taken = self.keys.contains {
                $0.row.keyData == row.row.keyData
                    && ($0.submissionType == row.submissionType || $0.submissionType == Self.pcr)
            }
            guard !taken else { continue }
            self.keys.append(row)
            inserted += 1
        }
        return inserted
    }

    /// The checks of `diagnosis_key` (`CreateKeys`) for one federated key.
    private static func check(_ key: StoredKey) throws(KeyStoreConstraintViolation) {
        try Self.check(
            KeySubmission(
                submissionType: key.submissionType,
                originCountry: key.originCountry,
                visitedCountries: key.visitedCountries,
                consentToFederation: key.consentToFederation,
                submissionHour: key.submissionHour,
                keys: [key.row]
            )
        )
    }

    /// The checks of the `keys` tables (`CreateKeys`).
    private static func check(_ submission: KeySubmission) throws(KeyStoreConstraintViolation) {
        func require(_ condition: Bool, _ what: String) throws(KeyStoreConstraintViolation) {
            if !condition { throw KeyStoreConstraintViolation(description: what) }
        }
        let countryCode = /^[A-Z]{2}$/
        try require(submission.submissionType.wholeMatch(of: /^SUBMISSION_TYPE_[A-Z_]+$/) != nil, "submission_type")
        try require(submission.submissionHour >= 0, "submission_timestamp")
        try require(submission.originCountry.wholeMatch(of: countryCode) != nil, "origin_country")
        if submission.selfReport != nil {
            try require(
                submission.submissionType.wholeMatch(of: /^SUBMISSION_TYPE_SRS_[A-Z_]+$/) != nil,
                "self_report_submissions.submission_type"
            )
        }
        for key in submission.keys {
            try require(key.keyData.count == 16, "key_data")
            try require(key.rollingStartIntervalNumber > 0, "rolling_start_interval_number")
            try require((1...144).contains(key.rollingPeriod), "rolling_period")
            try require((1...8).contains(key.transmissionRiskLevel), "transmission_risk_level")
            try require((-15...4000).contains(key.daysSinceOnsetOfSymptoms), "days_since_onset_of_symptoms")
        }
        for report in submission.protectedReports {
            try require(report.locationIDHash.count == 32, "trace_location_id_hash")
            try require(report.iv.count == 16, "initialization_vector")
            try require(report.encryptedCheckInRecord.count == 16, "encrypted_check_in_record")
            try require(report.mac.count == 32, "mac")
        }
        for warning in submission.traceWarnings {
            try require(warning.traceLocationID.count == 32, "trace_location_id")
            try require(warning.startIntervalNumber >= 0 && warning.period >= 0, "start_interval_number, period")
            try require((1...8).contains(warning.transmissionRiskLevel), "transmission_risk_level")
        }
    }

    func beginRun() -> Bool {
        guard !self.running else { return false }
        self.running = true
        return true
    }

    func endRun(restoring deleted: DeletedRows?) {
        if let deleted {
            self.keys += deleted.keys
            self.reports = (self.reports + deleted.reports).sorted { $0.id < $1.id }
            self.warnings = (self.warnings + deleted.warnings).sorted { $0.id < $1.id }
            self.selfReports += deleted.selfReports
        }
        self.running = false
    }

    func deleteSubmitted(before hour: Int64) -> DeletedRows {
        var deleted = DeletedRows()
        deleted.keys = self.keys.filter { $0.submissionHour < hour }
        deleted.reports = self.reports.filter { $0.hour < hour }
        deleted.warnings = self.warnings.filter { $0.hour < hour }
        self.keys.removeAll { $0.submissionHour < hour }
        self.reports.removeAll { $0.hour < hour }
        self.warnings.removeAll { $0.hour < hour }
        return deleted
    }

    func deleteSelfReports(before day: Int64) -> DeletedRows {
        var deleted = DeletedRows()
        deleted.selfReports = self.selfReports.filter { $0.day < day }
        self.selfReports.removeAll { $0.day < day }
        return deleted
    }

    func keys(minimumTRL: Int, fromHour: Int64) -> [DistributionKey] {
        self.keys.compactMap { key in
            guard key.row.transmissionRiskLevel >= minimumTRL || key.fromNHSApp, key.submissionHour >= fromHour,
                let data = KeyData(key.row.keyData)
            else { return nil }
            return DistributionKey(
                keyData: data,
                rollingStartIntervalNumber: key.row.rollingStartIntervalNumber,
                rollingPeriod: key.row.rollingPeriod,
                transmissionRiskLevel: key.row.transmissionRiskLevel,
                submissionHour: key.submissionHour,
                originCountry: key.originCountry,
                visitedCountries: key.visitedCountries
            )
        }
    }

    func checkInReports(after afterHour: Int64, before beforeHour: Int64) -> [StoredCheckInReport] {
        self.reports.filter { $0.hour > afterHour && $0.hour < beforeHour }.map { stored in
            StoredCheckInReport(
                locationIDHash: stored.row.locationIDHash,
                initializationVector: stored.row.iv,
                encryptedCheckInRecord: stored.row.encryptedCheckInRecord,
                mac: stored.row.mac,
                submissionHour: stored.hour
            )
        }
    }

    func traceWarnings(after afterHour: Int64, before beforeHour: Int64) -> [StoredTraceWarning] {
        self.warnings.filter { $0.hour > afterHour && $0.hour < beforeHour }.map { stored in
            StoredTraceWarning(
                locationIDHash: stored.row.traceLocationID,
                startIntervalNumber: UInt32(clamping: stored.row.startIntervalNumber),
                period: UInt32(clamping: stored.row.period),
                transmissionRiskLevel: UInt32(clamping: stored.row.transmissionRiskLevel),
                submissionHour: stored.hour
            )
        }
    }

    private static let pcr = "SUBMISSION_TYPE_PCR_TEST"
}

/// A publication run over the in-memory rows; it remembers what it deleted.
struct InMemoryKeyPublicationRun: KeyPublicationRun {
    let state: InMemoryKeyState
    private let log = DeletionLog()

    var deleted: DeletedRows {
        get async { await self.log.rows }
    }

    func deleteSubmitted(before hour: Int64) async throws -> KeyRetentionOutcome {
        let deleted = await self.state.deleteSubmitted(before: hour)
        await self.log.append(deleted)
        return KeyRetentionOutcome(
            keys: deleted.keys.count,
            checkInReports: deleted.reports.count,
            traceWarnings: deleted.warnings.count
        )
    }

    func deleteSelfReports(before day: Int64) async throws -> Int {
        let deleted = await self.state.deleteSelfReports(before: day)
        await self.log.append(deleted)
        return deleted.selfReports.count
    }

    func keys(minimumTRL: Int, fromHour: Int64) async throws -> [DistributionKey] {
        await self.state.keys(minimumTRL: minimumTRL, fromHour: fromHour)
    }

    func checkInReports(after afterHour: Int64, before beforeHour: Int64) async throws -> [StoredCheckInReport] {
        await self.state.checkInReports(after: afterHour, before: beforeHour)
    }

    func traceWarnings(after afterHour: Int64, before beforeHour: Int64) async throws -> [StoredTraceWarning] {
        await self.state.traceWarnings(after: afterHour, before: beforeHour)
    }
}

/// The rows one run deleted.
actor DeletionLog {
    private(set) var rows = DeletedRows()

    func append(_ deleted: DeletedRows) {
        self.rows.keys += deleted.keys
        self.rows.reports += deleted.reports
        self.rows.warnings += deleted.warnings
    }
}
