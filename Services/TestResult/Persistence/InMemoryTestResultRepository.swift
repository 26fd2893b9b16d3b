// Test results in memory, for route tests and local experiments without a database.

import ENModels
import Foundation

/// The same rules as `PostgresTestResultRepository`, on a dictionary guarded by the actor.
actor InMemoryTestResultRepository: TestResultRepository {
    private struct Row {
        var result: LabTestResult
        var sampleCollectedAt: Date
        var labID: String?
        var dobProtected: Bool
        let createdAt: Date

        var stored: StoredResult {
            StoredResult(
                result: self.result,
                sampleCollectedAt: self.sampleCollectedAt,
                labID: self.labID,
                dobProtected: self.dobProtected
            )
        }
    }

    private var rows: [String: Row] = [:]

    init() {}

    func store(_ uploads: [ResultUpload], now: Date) async throws -> StoreOutcome {
        let lab = uploads.first?.labID
        let owned = uploads.first?.labAuthenticated ?? false
        let foreign = uploads.contains { upload in
            self.rows[upload.key].map { $0.labID != nil && $0.labID != lab } ?? false
        }
        guard !(owned && foreign) else { throw LabUploadError.ownedByAnotherLab }
        var outcome = StoreOutcome()
        for upload in uploads {
            guard let existing = self.rows[upload.key] else {
                self.rows[upload.key] = Row(
                    result: upload.result,
                    sampleCollectedAt: upload.sampleCollectedAt,
                    labID: upload.labID,
                    dobProtected: upload.dobProtected,
                    createdAt: now
                )
                outcome.inserted += 1
                continue
            }
            let pendingOverFinal = upload.result.outcome == .pending && existing.result.isFinal
            guard existing.result.outcome != .redeemed, !pendingOverFinal else {
                outcome.unchanged += 1
                continue
            }
            self.rows[upload.key] = Row(
                result: upload.result,
                sampleCollectedAt: upload.sampleCollectedAt,
                labID: upload.labID,
                dobProtected: existing.dobProtected || upload.dobProtected,
                createdAt: existing.createdAt
            )
            outcome.updated += 1
        }
        return outcome
    }

    func findOrCreatePending(key: String, kind: TestKind, now: Date) async throws -> StoredResult {
        let row =
            self.rows[key]
            ?? Row(result: .pending(kind), sampleCollectedAt: now, labID: nil, dobProtected: false, createdAt: now)
        self.rows[key] = row
        return row.stored
    }

    func applyRetention(maskBefore: Date, deleteBefore: Date, now: Date) async throws -> TestResultRetentionOutcome? {
        var outcome = TestResultRetentionOutcome()
        for (key, row) in self.rows {
            if row.createdAt < deleteBefore {
                self.rows[key] = nil
                outcome.deleted += 1
            } else if row.createdAt < maskBefore && row.result.outcome != .redeemed {
                self.rows[key]?.result = row.result.redeemed
                outcome.masked += 1
            }
        }
        return outcome
    }

    /// Number of stored rows (for tests).
    var count: Int { self.rows.count }
}
