// Orders and submission tokens of the NHS test path in the `verification` database (migration 0005).

import ENPersistence
import Foundation
import Logging
import PostgresNIO

/// An unexpired order as a poll or exchange finds it.
struct NHSOrder: Sendable, Equatable {
    var id: Int64
    var ctaHash: String
}

/// Whether an order's keys were submitted, and by which submission attempt (`nil`: one that named none).
struct NHSOrderRedemption: Sendable, Equatable {
    var order: NHSOrder
    var submitted: Bool
    var submittedBy: UUID?
}

/// Every rule that must hold under concurrency is one conditional statement: an exchange counts (at most two) in its
/// upsert, a submission token is used once per order by `submitted_at`.
struct NHSOrderStore: Sendable {
    let database: DatabasePool
    let logger: Logger

    /// How long a poll or exchange of an available result keeps the order and the submission token (nhs §3.2,
    /// `markForDeletion`: 4 hours and 4 days).
    static let orderAfterRead: TimeInterval = 4 * 3600
    static let submissionAfterRead: TimeInterval = 4 * 86_400

    init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    /// A new order with its first submission token, both living until `expiresAt`.
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

    /// The unexpired order of a polling token.
    func order(pollingTokenHash: String, now: Date) async throws -> NHSOrder? {
        try await self.first(
            """
            SELECT id, cta_hash FROM nhs_virology_order
            WHERE polling_token_hash = \(pollingTokenHash) AND expires_at > \(now)
            """
        )
    }

    /// The unexpired order of a CTA token (one of its hashes).
    func order(ctaCandidates: [String], now: Date) async throws -> NHSOrder? {
        try await self.first(
            """
            SELECT id, cta_hash FROM nhs_virology_order
            WHERE cta_hash = ANY(\(ctaCandidates)::text[]) AND expires_at > \(now)
            """
        )
    }

    /// After a poll found an available result: the order lives 4 more hours, its submission tokens 4 more days
    /// (when the result is positive).
    func markRead(orderID: Int64, positive: Bool, now: Date) async throws {
        try await self.database.query(
            """
            UPDATE nhs_virology_order
            SET expires_at = \(now.addingTimeInterval(Self.orderAfterRead)),
                submission_expires_at = CASE WHEN \(positive) THEN \(now.addingTimeInterval(Self.submissionAfterRead)) ELSE submission_expires_at END
            WHERE id = \(orderID)
            """,
            logger: self.logger
        )
    }

    /// A CTA exchange of an available result: creates the order when the token came from the token API, counts the
    /// exchange (at most two per token, nhs §3.2 step 5), refreshes the lifetimes and stores a new submission
    /// token, all in one statement. `false` when the token was exchanged twice already (or its order expired).
    func exchange(ctaHash: String, submissionTokenHash: String, positive: Bool, now: Date) async throws -> Bool {
        let orderUntil = now.addingTimeInterval(Self.orderAfterRead)
        let submissionUntil = now.addingTimeInterval(positive ? Self.submissionAfterRead : Self.orderAfterRead)
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

    /// The order of an unused, unexpired submission token whose order has not submitted keys.
    func submittable(tokenHash: String, now: Date) async throws -> NHSOrder? {
        try await self.first(
            """
            SELECT o.id, o.cta_hash FROM nhs_submission_token t JOIN nhs_virology_order o ON o.id = t.order_id
            WHERE t.token_hash = \(tokenHash) AND o.submitted_at IS NULL AND o.submission_expires_at > \(now)
            """
        )
    }

    /// The order a submission token belongs to, whether its keys were submitted and by which attempt, whatever its
    /// lifetimes; `nil` for a token no order has.
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

    /// Marks the order's keys submitted by `submission`; `false` when a concurrent call did first.
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

    /// Deletes orders (and their tokens) past both lifetimes and older than four weeks; returns how many orders.
    ///
    /// An expired order is kept until test-result-service has deleted the result it links to (four weeks after the
    /// order or the token API's upload, `orderLifetime`): while the row exists, its exchange count and `submitted_at`
    /// refuse another exchange of the same CTA token, which would otherwise create a fresh order with a new
    /// submission token for a result whose keys were submitted already.
    func deleteExpired(now: Date) async throws -> Int {
        let resultsGoneBefore = now.addingTimeInterval(-NHSVirologyController.orderLifetime)
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
