// The NHS path's results in the `testresult` database (table `nhs_virology_result`, migration 0003).

import ENNHS
import ENPersistence
import ENServiceKit
import Foundation
import Logging
import PostgresNIO

/// Every statement binds its values; each state change is a single conditional statement.
struct PostgresNHSResultRepository: NHSResultRepository {
    let database: DatabasePool
    let logger: Logger

    init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    /// The `NOT EXISTS` on the other keys' hashes cannot race: no new row is ever stored under an older key.
    func createOrder(ctaHash: String, otherHashes: [String], now: Date, expiresAt: Date) async throws -> Bool {
        let rows = try await self.database.query(
            """
            INSERT INTO nhs_virology_result (cta_hash, status, source, created_at, updated_at, expires_at)
            SELECT \(ctaHash), 'pending', 'order', \(now), \(now), \(expiresAt)
            WHERE NOT EXISTS (SELECT 1 FROM nhs_virology_result WHERE cta_hash = ANY(\(otherHashes)::text[]))
            ON CONFLICT (cta_hash) DO NOTHING RETURNING 1
            """,
            logger: self.logger
        )
        return !rows.isEmpty
    }

    func createAvailable(
        ctaHash: String,
        otherHashes: [String],
        result: NHSLabResult,
        now: Date,
        expiresAt: Date
    ) async throws -> Bool {
        let rows = try await self.database.query(
            """
            INSERT INTO nhs_virology_result
                (cta_hash, status, test_end_date, test_result, test_kit, source, created_at, updated_at, expires_at)
            SELECT \(ctaHash), 'available', \(result.testEndDate.day)::date, \(result.testResult.rawValue),
                   \(result.testKit.rawValue), 'tokengen', \(now), \(now), \(expiresAt)
            WHERE NOT EXISTS (SELECT 1 FROM nhs_virology_result WHERE cta_hash = ANY(\(otherHashes)::text[]))
            ON CONFLICT (cta_hash) DO NOTHING RETURNING 1
            """,
            logger: self.logger
        )
        return !rows.isEmpty
    }

    /// One transaction: a collision rolls back every row.
    func createAvailable(
        _ entries: [(ctaHash: String, result: NHSLabResult)],
        otherHashes: [String],
        now: Date,
        expiresAt: Date
    ) async throws {
        try await rethrowingTransactionCause {
            try await self.database.withTransaction(logger: self.logger) { connection in
                let older = try await connection.query(
                    "SELECT 1 FROM nhs_virology_result WHERE cta_hash = ANY(\(otherHashes)::text[]) LIMIT 1",
                    logger: self.logger
                )
                for try await _ in older { throw NHSCollision() }
                let rows = try await connection.query(
                    """
                    INSERT INTO nhs_virology_result
                        (cta_hash, status, test_end_date, test_result, test_kit, source, created_at, updated_at, expires_at)
                    SELECT entry.cta_hash, 'available', entry.day::date, entry.result, entry.kit, 'tokengen', \(now), \(now), \(expiresAt)
                    FROM unnest(\(entries.map(\.ctaHash))::text[], \(entries.map(\.result.testEndDate.day))::text[],
                                \(entries.map(\.result.testResult.rawValue))::text[], \(entries.map(\.result.testKit.rawValue))::text[])
                        AS entry(cta_hash, day, result, kit)
                    ON CONFLICT (cta_hash) DO NOTHING RETURNING 1
                    """,
                    logger: self.logger
                )
                var inserted = 0
                for try await _ in rows { inserted += 1 }
                guard inserted == entries.count else { throw NHSCollision() }
            }
        }
    }

    func upload(candidates: [String], result: NHSLabResult, now: Date) async throws -> NHSUploadOutcome {
        let updated = try await self.database.query(
            """
            UPDATE nhs_virology_result
            SET status = 'available', test_end_date = \(result.testEndDate.day)::date,
                test_result = \(result.testResult.rawValue), test_kit = \(result.testKit.rawValue), updated_at = \(now)
            WHERE cta_hash = ANY(\(candidates)::text[]) AND status = 'pending' AND expires_at > \(now)
            RETURNING 1
            """,
            logger: self.logger
        )
        if !updated.isEmpty { return .stored }
        return try await self.find(candidates: candidates, now: now) == nil ? .noOrder : .alreadyAvailable
    }

    func find(candidates: [String], now: Date) async throws -> NHSStoredResult? {
        let rows = try await self.database.query(
            """
            SELECT cta_hash, status, to_char(test_end_date, 'YYYY-MM-DD'), test_result, test_kit FROM nhs_virology_result
            WHERE cta_hash = ANY(\(candidates)::text[]) AND expires_at > \(now)
            """,
            logger: self.logger
        )
        guard let row = rows.first else { return nil }
        let (hash, status, day, result, kit) = try row.decode((String, String, String?, String?, String?).self)
        return NHSStoredResult(
            ctaHash: hash,
            status: NHSStoredResult.Status(rawValue: status) ?? .pending,
            testEndDate: day.flatMap(NHSTestEndDate.init(day:)),
            testResult: result.flatMap(NHSTestResult.init(rawValue:)),
            testKit: kit.flatMap(NHSTestKit.init(rawValue:))
        )
    }

    func deleteExpired(now: Date) async throws -> Int {
        try await self.database.query(
            "DELETE FROM nhs_virology_result WHERE expires_at <= \(now) RETURNING 1",
            logger: self.logger
        ).count
    }
}
