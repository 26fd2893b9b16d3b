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

    /// The pool; a request waits at most its lease timeout for a connection.
    let database: DatabasePool
    let logger: Logger

    init(
        client: PostgresClient,
        logger: Logger,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
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
        // One statement for the whole batch: concurrent uploads of the same id serialise on the unique index. The
        // validator has removed duplicate keys, which ON CONFLICT could not update twice. A batch has one lab id.
        // A row is left as it is when it is redeemed (code % 5 = 4), when a pending code (% 5 = 0) would replace a
        // final one (% 5 in 1…3), or when another authenticated lab owns it; in that last case the whole batch is
        // refused, in the same transaction, so no other result of the batch is stored either. Without lab
        // certificates (a loopback development setup) the body's labId proves nothing and owns nothing.
        let labID = uploads.first?.labID
        let owned = uploads.first?.labAuthenticated ?? false
        let keys = uploads.map(\.key)
        return try await rethrowingTransactionCause {
            try await self.database.withTransaction(logger: self.logger) { connection in
                let rows = try await connection.query(
                    """
                    INSERT INTO test_result (result_id, result, result_date, lab_id, dob_protected, created_at, updated_at)
                    SELECT upload.result_id, upload.result, upload.result_date, \(labID), upload.dob_protected, \(now), \(now)
                    FROM unnest(\(keys)::text[], \(uploads.map { Int16($0.result.code) })::smallint[],
                                \(uploads.map(\.sampleCollectedAt))::timestamptz[], \(uploads.map(\.dobProtected))::boolean[])
                        AS upload(result_id, result, result_date, dob_protected)
                    ORDER BY upload.result_id
                    ON CONFLICT (result_id) DO UPDATE
                        SET result = excluded.result, result_date = excluded.result_date, lab_id = excluded.lab_id,
                            dob_protected = test_result.dob_protected OR excluded.dob_protected,
                            updated_at = excluded.updated_at
                        WHERE test_result.result % 5 <> 4
                          AND (NOT \(owned) OR test_result.lab_id IS NULL OR test_result.lab_id = excluded.lab_id)
                          AND NOT (excluded.result % 5 = 0 AND test_result.result % 5 BETWEEN 1 AND 3)
                    RETURNING (xmax = 0) AS inserted
                    """,
                    logger: self.logger
                )
                var outcome = StoreOutcome()
                for try await inserted in rows.decode(Bool.self) {
                    if inserted { outcome.inserted += 1 } else { outcome.updated += 1 }
                }
                outcome.unchanged = uploads.count - outcome.inserted - outcome.updated
                let foreign = try await connection.query(
                    """
                    SELECT count(*) FROM test_result
                    WHERE \(owned) AND result_id = ANY(\(keys)::text[]) AND lab_id IS NOT NULL AND lab_id <> \(labID)
                    """,
                    logger: self.logger
                )
                for try await count in foreign.decode(Int.self) where count > 0 {
                    throw LabUploadError.ownedByAnotherLab
                }
                return outcome
            }
        }
    }

    func findOrCreatePending(key: String, kind: TestKind, now: Date) async throws -> StoredResult {
        let pending = Int16(LabTestResult.pending(kind).code)
        return try await self.database.withConnection { connection in
            // Most lookups are polls of a known id: read first, insert only when missing. Separate statements,
            // not one CTE: a CTE's SELECT would not see a row a concurrent transaction committed while our INSERT
            // waited on it; hence the second read when a concurrent lookup inserted first.
            if let stored = try await self.read(key: key, connection: connection) { return stored }
            let inserted = try await connection.query(
                """
                INSERT INTO test_result (result_id, result, result_date, created_at, updated_at)
                VALUES (\(key), \(pending), \(now), \(now), \(now))
                ON CONFLICT (result_id) DO NOTHING
                RETURNING result, result_date, lab_id, dob_protected
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
                "SELECT result, result_date, lab_id, dob_protected FROM test_result WHERE result_id = \(key)",
                logger: self.logger
            )
        )
    }

    private static func storedResult(_ rows: PostgresRowSequence) async throws -> StoredResult? {
        for try await (code, date, labID, protected) in rows.decode((Int16, Date, String?, Bool).self) {
            guard let result = LabTestResult(code: Int(code)) else { throw StoredResultError.invalidCode }
            return StoredResult(result: result, sampleCollectedAt: date, labID: labID, dobProtected: protected)
        }
        return nil
    }

    func applyRetention(maskBefore: Date, deleteBefore: Date, now: Date) async throws -> TestResultRetentionOutcome? {
        try await Self.retentionLock.withTryLock(client: self.database.client, logger: self.logger) { connection in
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
