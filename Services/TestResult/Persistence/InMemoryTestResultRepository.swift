// Test results in memory, for route tests and local experiments without a database.

import ENModels
import Foundation

/// The same rules as `PostgresTestResultRepository`, on a dictionary guarded by the actor.
actor InMemoryTestResultRepository: TestResultRepository {
    private struct Row {
        var result: LabTestResult
        var sampleCollectedAt: Date
        var labID: String?
        let createdAt: Date
    }

    private var rows: [String: Row] = [:]

    init() {}

    func store(_ uploads: [ResultUpload], now: Date) async throws -> StoreOutcome {
        var outcome = StoreOutcome()
        for upload in uploads {
            if let existing = self.rows[upload.key] {
                guard existing.result.outcome != .redeemed else {
                    outcome.unchanged += 1
                    continue
                }
                self.rows[upload.key] = Row(
                    result: upload.result,
                    sampleCollectedAt: upload.sampleCollectedAt,
                    labID: upload.labID,
                    createdAt: existing.createdAt
                )
                outcome.updated += 1
            } else {
                self.rows[upload.key] = Row(
                    result: upload.result,
                    sampleCollectedAt: upload.sampleCollectedAt,
                    labID: upload.labID,
                    createdAt: now
                )
                outcome.inserted += 1
            }
        }
        return outcome
    }

    func findOrCreatePending(key: String, kind: TestKind, now: Date) async throws -> StoredResult {
        let row = self.rows[key] ?? Row(result: .pending(kind), sampleCollectedAt: now, labID: nil, createdAt: now)
        self.rows[key] = row
        return StoredResult(result: row.result, sampleCollectedAt: row.sampleCollectedAt, labID: row.labID)
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
