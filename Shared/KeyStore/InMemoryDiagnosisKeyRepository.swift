// The `keys` database in memory, for route tests and runs without PostgreSQL.

/// Keeps keys and check-ins in memory with the rules of the PostgreSQL repository: a key is stored once per type,
/// never beside a PCR key of the same data, an encrypted check-in once; one publication run at a time, whose
/// deletions are put back when it fails.
package struct InMemoryDiagnosisKeyRepository: DiagnosisKeyRepository {
    private let state = InMemoryKeyState()

    package init() {}

    package func store<Refusal: Error>(
        _ submission: KeySubmission,
        authorize: () async throws(Refusal) -> Void
    ) async throws(KeySubmissionFailure<Refusal>) -> KeySubmissionOutcome {
        do {
            try await authorize()
        } catch {
            throw .refused(error)
        }
        return await self.state.insert(submission)
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
}

/// A key with the fields of its submission, as the repository holds it.
package struct StoredKey: Sendable, Equatable {
    package var row: DiagnosisKeyRow
    package var submissionType: String
    package var submissionHour: Int64
    package var originCountry: String
    package var visitedCountries: [String]
    package var consentToFederation: Bool
}

/// What a publication run deleted, so that a failed run can put it back.
struct DeletedRows: Sendable {
    var keys: [StoredKey] = []
    var reports: [(ProtectedReportRow, hour: Int64)] = []
    var warnings: [(TraceWarningRow, hour: Int64, type: String)] = []
}

/// The rows, behind an actor so that every insert and deletion is atomic.
actor InMemoryKeyState {
    private(set) var keys: [StoredKey] = []
    private var reports: [(ProtectedReportRow, hour: Int64)] = []
    private var warnings: [(TraceWarningRow, hour: Int64, type: String)] = []
    private var running = false

    func insert(_ submission: KeySubmission) -> KeySubmissionOutcome {
        var outcome = KeySubmissionOutcome()
        for row in submission.keys {
            let taken = self.keys.contains {
                $0.row.keyData == row.keyData
                    && ($0.submissionType == submission.submissionType || $0.submissionType == Self.pcr)
            }
            guard !taken else { continue }
            self.keys.append(
                StoredKey(
                    row: row,
                    submissionType: submission.submissionType,
                    submissionHour: submission.submissionHour,
                    originCountry: submission.originCountry,
                    visitedCountries: submission.visitedCountries,
                    consentToFederation: submission.consentToFederation
                )
            )
            outcome.keys += 1
        }
        for report in submission.protectedReports where !self.reports.contains(where: { $0.0 == report }) {
            self.reports.append((report, submission.submissionHour))
            outcome.protectedReports += 1
        }
        for warning in submission.traceWarnings {
            self.warnings.append((warning, submission.submissionHour, submission.submissionType))
            outcome.traceWarnings += 1
        }
        return outcome
    }

    func beginRun() -> Bool {
        guard !self.running else { return false }
        self.running = true
        return true
    }

    func endRun(restoring deleted: DeletedRows?) {
        if let deleted {
            self.keys += deleted.keys
            self.reports += deleted.reports
            self.warnings += deleted.warnings
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

    func keys(minimumTRL: Int, fromHour: Int64) -> [DistributionKey] {
        self.keys.compactMap { key in
            guard key.row.transmissionRiskLevel >= minimumTRL, key.submissionHour >= fromHour,
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
        self.reports.filter { $0.hour > afterHour && $0.hour < beforeHour }.map { report, hour in
            StoredCheckInReport(
                locationIDHash: report.locationIDHash,
                initializationVector: report.iv,
                encryptedCheckInRecord: report.encryptedCheckInRecord,
                mac: report.mac,
                submissionHour: hour
            )
        }
    }

    func traceWarnings(after afterHour: Int64, before beforeHour: Int64) -> [StoredTraceWarning] {
        self.warnings.filter { $0.hour > afterHour && $0.hour < beforeHour }.map { warning, hour, _ in
            StoredTraceWarning(
                locationIDHash: warning.traceLocationID,
                startIntervalNumber: UInt32(clamping: warning.startIntervalNumber),
                period: UInt32(clamping: warning.period),
                transmissionRiskLevel: UInt32(clamping: warning.transmissionRiskLevel),
                submissionHour: hour
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
