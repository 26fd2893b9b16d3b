// Orders and submission tokens of the NHS test path in the `verification` database (migration 0005).

import ENPersistence
import Foundation
import Logging
import PostgresNIO

/// Each rule that must hold under concurrency is one conditional statement: an exchange counts (at most two) in its
/// upsert, a submission token is used once per order by `submitted_at`.
struct PostgresNHSOrderRepository: NHSOrderRepository {
    let database: DatabasePool
    let logger: Logger

    init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    func createOrder(
        ctaHash: String,
        pollingTokenHash: String,
        submissionTokenHash: String,
        now: Date,
        expiresAt: Date
    ) async throws {
        try await self.database.query(
            """
            WITH created AS (
                INSERT INTO nhs_virology_order (cta_hash, polling_token_hash, created_at, expires_at, submission_expires_at)
                VALUES (\(ctaHash), \(pollingTokenHash), \(now), \(expiresAt), \(expiresAt)) RETURNING id
            )
            INSERT INTO nhs_submission_token (token_hash, order_id) SELECT \(submissionTokenHash), id FROM created
            """,
            logger: self.logger
        )
    }

    func order(pollingTokenHash: String, now: Date) async throws -> NHSOrder? {
        try await self.first(
            """
            SELECT id, cta_hash FROM nhs_virology_order
            WHERE polling_token_hash = \(pollingTokenHash) AND expires_at > \(now)
            """
        )
    }

    func order(ctaCandidates: [String], now: Date) async throws -> NHSOrder? {
        try await self.first(
            """
            SELECT id, cta_hash FROM nhs_virology_order
            WHERE cta_hash = ANY(\(ctaCandidates)::text[]) AND expires_at > \(now)
            """
        )
    }

    func markRead(orderID: Int64, positive: Bool, now: Date) async throws {
        try await self.database.query(
            """
            UPDATE nhs_virology_order
            SET expires_at = \(now.addingTimeInterval(NHSOrderLifetime.afterRead)),
                submission_expires_at = CASE WHEN \(positive) THEN \(now.addingTimeInterval(NHSOrderLifetime.submissionAfterRead)) ELSE submission_expires_at END
            WHERE id = \(orderID)
            """,
            logger: self.logger
        )
    }

    func exchange(ctaHash: String, submissionTokenHash: String, positive: Bool, now: Date) async throws -> Bool {
        let orderUntil = now.addingTimeInterval(NHSOrderLifetime.afterRead)
        let submissionUntil = now.addingTimeInterval(
            positive ? NHSOrderLifetime.submissionAfterRead : NHSOrderLifetime.afterRead
        )
        let rows = try await self.database.query(
            """
            WITH counted AS (
                INSERT INTO nhs_virology_order (cta_hash, download_count, created_at, expires_at, submission_expires_at)
                VALUES (\(ctaHash), 1, \(now), \(orderUntil), \(submissionUntil))
                ON CONFLICT (cta_hash) DO UPDATE
                    SET download_count = nhs_virology_order.download_count + 1,
                        expires_at = excluded.expires_at,
                        submission_expires_at = GREATEST(nhs_virology_order.submission_expires_at, excluded.submission_expires_at)
                    WHERE nhs_virology_order.download_count < 2 AND nhs_virology_order.expires_at > \(now)
                RETURNING id
            )
            INSERT INTO nhs_submission_token (token_hash, order_id) SELECT \(submissionTokenHash), id FROM counted
            RETURNING 1
            """,
            logger: self.logger
        )
        return !rows.isEmpty
    }

    func submittable(tokenHash: String, now: Date) async throws -> NHSOrder? {
        try await self.first(
            """
            SELECT o.id, o.cta_hash FROM nhs_submission_token t JOIN nhs_virology_order o ON o.id = t.order_id
            WHERE t.token_hash = \(tokenHash) AND o.submitted_at IS NULL AND o.submission_expires_at > \(now)
            """
        )
    }

    func redemption(tokenHash: String) async throws -> NHSOrderRedemption? {
        let rows = try await self.database.query(
            """
            SELECT o.id, o.cta_hash, o.submitted_at IS NOT NULL, o.submitted_by
              FROM nhs_submission_token t JOIN nhs_virology_order o ON o.id = t.order_id
             WHERE t.token_hash = \(tokenHash)
            """,
            logger: self.logger
        )
        guard let row = rows.first else { return nil }
        let (id, hash, submitted, submittedBy) = try row.decode((Int64, String, Bool, UUID?).self)
        return NHSOrderRedemption(
            order: NHSOrder(id: id, ctaHash: hash),
            submitted: submitted,
            submittedBy: submittedBy
        )
    }

    func markSubmitted(orderID: Int64, now: Date, by submission: UUID?) async throws -> Bool {
        let rows = try await self.database.query(
            """
            UPDATE nhs_virology_order SET submitted_at = \(now), submitted_by = \(submission)
            WHERE id = \(orderID) AND submitted_at IS NULL AND submission_expires_at > \(now)
            RETURNING 1
            """,
            logger: self.logger
        )
        return !rows.isEmpty
    }

    func deleteExpired(now: Date) async throws -> Int {
        let resultsGoneBefore = now.addingTimeInterval(-NHSOrderLifetime.untilRead)
        return try await self.database.query(
            """
            DELETE FROM nhs_virology_order
            WHERE GREATEST(expires_at, submission_expires_at) <= \(now) AND created_at <= \(resultsGoneBefore)
            RETURNING 1
            """,
            logger: self.logger
        ).count
    }

    private func first(_ query: PostgresQuery) async throws -> NHSOrder? {
        guard let row = try await self.database.query(query, logger: self.logger).first else { return nil }
        let (id, hash) = try row.decode((Int64, String).self)
        return NHSOrder(id: id, ctaHash: hash)
    }
}
