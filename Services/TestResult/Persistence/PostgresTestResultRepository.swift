// Test results in the `testresult` PostgreSQL database.

import ENModels
import ENPersistence
import Foundation
import Logging
import PostgresNIO

/// Stores results in table `test_result` (migration 0001). All SQL binds its values; identifiers are constants.
struct PostgresTestResultRepository: TestResultRepository {
    /// Advisory lock that keeps replicas from running retention at the same time.
    static let retentionLock = AdvisoryLock(name: "testresult.retention")

    let client: PostgresClient
    let logger: Logger

    init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger.cappedForDatabase
    }

    func store(_ uploads: [ResultUpload], now: Date) async throws -> StoreOutcome {
        guard !uploads.isEmpty else { return StoreOutcome() }
        // The statement inserts in key order (its ORDER BY), so two batches sharing ids in different orders lock
        // them in the same order and cannot deadlock each other. Retention locks in its own order; the rare
        // deadlock with it is retried.
        var attempt = 1
        while true {
            do {
                return try await self.upsert(uploads, now: now)
            } catch let error as PSQLError where error.isTransactionConflict && attempt < 3 {
                attempt += 1
            }
        }
    }

    private func upsert(_ uploads: [ResultUpload], now: Date) async throws -> StoreOutcome {
        // One statement for the whole batch: it is atomic, and concurrent uploads of the same id serialise on the
        // unique index. The validator has removed duplicate keys, which ON CONFLICT could not update twice.
        // A redeemed row (code 4, 9 or 14: code % 5 = 4) is never updated. A batch has one lab id.
        let labID = uploads.first?.labID
        let rows = try await self.client.query(
            """
            INSERT INTO test_result (result_id, result, result_date, lab_id, created_at, updated_at)
            SELECT upload.result_id, upload.result, upload.result_date, \(labID), \(now), \(now)
            FROM unnest(\(uploads.map(\.key))::text[], \(uploads.map { Int16($0.result.code) })::smallint[],
                        \(uploads.map(\.sampleCollectedAt))::timestamptz[])
                AS upload(result_id, result, result_date)
            ORDER BY upload.result_id
            ON CONFLICT (result_id) DO UPDATE
                SET result = excluded.result, result_date = excluded.result_date,
                    lab_id = excluded.lab_id, updated_at = excluded.updated_at
                WHERE test_result.result % 5 <> 4
            RETURNING (xmax = 0) AS inserted
            """,
            logger: self.logger
        )
        var outcome = StoreOutcome()
        for try await inserted in rows.decode(Bool.self) {
            if inserted { outcome.inserted += 1 } else { outcome.updated += 1 }
        }
        outcome.unchanged = uploads.count - outcome.inserted - outcome.updated
        return outcome
    }

    func findOrCreatePending(key: String, kind: TestKind, now: Date) async throws -> StoredResult {
        let pending = Int16(LabTestResult.pending(kind).code)
        return try await self.client.withConnection { connection in
            // Most lookups are polls of a known id: read first, insert only when missing. Separate statements,
            // not one CTE: a CTE's SELECT would not see a row a concurrent transaction committed while our INSERT
            // waited on it; hence the second read when a concurrent lookup inserted first.
            if let stored = try await self.read(key: key, connection: connection) { return stored }
            let inserted = try await connection.query(
                """
                INSERT INTO test_result (result_id, result, result_date, created_at, updated_at)
                VALUES (\(key), \(pending), \(now), \(now), \(now))
                ON CONFLICT (result_id) DO NOTHING
                RETURNING result, result_date, lab_id
                """,
                logger: self.logger
            )
            if let stored = try await Self.storedResult(inserted) { return stored }
            if let stored = try await self.read(key: key, connection: connection) { return stored }
            throw StoredResultError.vanished
        }
    }

    private func read(key: String, connection: PostgresConnection) async throws -> StoredResult? {
        try await Self.storedResult(
            try await connection.query(
                "SELECT result, result_date, lab_id FROM test_result WHERE result_id = \(key)",
                logger: self.logger
            )
        )
    }

    private static func storedResult(_ rows: PostgresRowSequence) async throws -> StoredResult? {
        for try await (code, date, labID) in rows.decode((Int16, Date, String?).self) {
            guard let result = LabTestResult(code: Int(code)) else { throw StoredResultError.invalidCode }
            return StoredResult(result: result, sampleCollectedAt: date, labID: labID)
        }
        return nil
    }

    func applyRetention(maskBefore: Date, deleteBefore: Date, now: Date) async throws -> TestResultRetentionOutcome? {
        try await Self.retentionLock.withTryLock(client: self.client, logger: self.logger) { connection in
            var outcome = TestResultRetentionOutcome()
            // Deletion first, so rows about to go are not rewritten.
            let deleted = try await connection.query(
                "DELETE FROM test_result WHERE created_at < \(deleteBefore) RETURNING 1",
                logger: self.logger
            )
            for try await _ in deleted { outcome.deleted += 1 }
            // Masking keeps the kind: 0–3 → 4, 5–8 → 9, 10–13 → 14 (see LabTestResult.redeemed).
            let masked = try await connection.query(
                """
                UPDATE test_result SET result = result - result % 5 + 4, updated_at = \(now)
                WHERE created_at < \(maskBefore) AND result % 5 <> 4
                RETURNING 1
                """,
                logger: self.logger
            )
            for try await _ in masked { outcome.masked += 1 }
            return outcome
        }
    }
}

/// A row that cannot be read back as a result.
enum StoredResultError: Error {
    /// The database holds a code outside 0–14 (the table's check constraint makes this unreachable).
    case invalidCode
    /// The row disappeared between insert and read (retention deleted a row created "now": only with a wrong clock).
    case vanished
}
