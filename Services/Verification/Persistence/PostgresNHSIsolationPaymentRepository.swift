// Isolation payment tokens in the `verification` database (migration 0007).

import ENPersistence
import Foundation
import Logging
import PostgresNIO

/// `nhs_isolation_payment_token` (migration 0007): a token is kept as its SHA-256 (256 random bits need no pepper);
/// every transition is one conditional statement, so a token is unlocked once and consumed once, also in parallel.
struct PostgresNHSIsolationPaymentRepository: NHSIsolationPaymentRepository {
    let database: DatabasePool
    let logger: Logger

    init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    func create(tokenHash: String, now: Date, expiresAt: Date) async throws -> Bool {
        try await !self.database.query(
            """
            INSERT INTO nhs_isolation_payment_token (token_hash, status, created_at, expires_at)
            VALUES (\(tokenHash), 'created', \(now), \(expiresAt))
            ON CONFLICT (token_hash) DO NOTHING RETURNING 1
            """,
            logger: self.logger
        ).isEmpty
    }

    func unlock(tokenHash: String, encounter: Date, isolationEnd: Date, now: Date) async throws -> Bool {
        try await !self.database.query(
            """
            UPDATE nhs_isolation_payment_token
            SET status = 'valid', risky_encounter_date = \(encounter), isolation_period_end_date = \(isolationEnd),
                updated_at = \(now), expires_at = \(isolationEnd)
            WHERE token_hash = \(tokenHash) AND status = 'created' AND expires_at > \(now)
            RETURNING 1
            """,
            logger: self.logger
        ).isEmpty
    }

    func verify(tokenHash: String, now: Date) async throws -> NHSIsolationClaim? {
        try await self.claim(
            """
            UPDATE nhs_isolation_payment_token SET validated_at = \(now)
            WHERE token_hash = \(tokenHash) AND status = 'valid' AND expires_at > \(now)
            RETURNING risky_encounter_date, isolation_period_end_date, created_at, updated_at
            """
        )
    }

    func consume(tokenHash: String, now: Date) async throws -> NHSIsolationClaim? {
        try await self.claim(
            """
            DELETE FROM nhs_isolation_payment_token
            WHERE token_hash = \(tokenHash) AND status = 'valid' AND expires_at > \(now)
            RETURNING risky_encounter_date, isolation_period_end_date, created_at, updated_at
            """
        )
    }

    func deleteExpired(now: Date) async throws -> Int {
        try await self.database.query(
            "DELETE FROM nhs_isolation_payment_token WHERE expires_at <= \(now) RETURNING 1",
            logger: self.logger
        ).count
    }

    private func claim(_ query: PostgresQuery) async throws -> NHSIsolationClaim? {
        guard let row = try await self.database.query(query, logger: self.logger).first else { return nil }
        let (encounter, end, created, updated) = try row.decode((Date, Date, Date, Date).self)
        return NHSIsolationClaim(
            riskyEncounterDate: encounter,
            isolationPeriodEndDate: end,
            createdAt: created,
            updatedAt: updated
        )
    }
}
