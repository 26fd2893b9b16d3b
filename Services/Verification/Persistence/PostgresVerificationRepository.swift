// Sessions, TANs and teleTANs in the `verification` database on PostgreSQL.

import ENPersistence
import Foundation
import Logging
import PostgresNIO

/// All SQL binds its values. Every rule that must hold under concurrency is one statement or one transaction: the
/// one-token-per-key rule (unique keys, inserted with `ON CONFLICT DO NOTHING` so no conflict is logged), the TAN
/// quota (a conditional counter update), single-use TANs (a conditional update) and the teleTAN rate limit (a
/// transaction-scoped advisory lock).
struct PostgresVerificationRepository: VerificationRepository {
    static let retentionLock = AdvisoryLock(name: "verification.retention")
    static let teleTANIssueLock = AdvisoryLock(name: "verification.teletan.issue")

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

    /// A transaction's outcome that is not a failure but must undo what the transaction wrote.
    private struct Rollback<Outcome: Sendable>: Error {
        var outcome: Outcome
    }

    // MARK: - Registration

    /// A session for a hashed GUID (and DOB hash). Both hashes go into `registered_key`, whose primary key makes
    /// a value registrable once, whichever of the two columns it was first used in (§1.4).
    func registerGUID(
        tokenHash: String,
        guid: HashedGUID,
        dob: DOBHash?,
        now: Date,
        dailyCap: Int
    ) async throws -> RegistrationOutcome {
        let keys = [guid.value] + (dob.map { [$0.value] } ?? [])
        return try await self.transaction { connection in
            let id = try await self.insertSession(
                connection,
                tokenHash: tokenHash,
                """
                INSERT INTO app_session (registration_token_hash, source, hashed_guid, hashed_guid_dob, created_at, updated_at)
                VALUES (\(tokenHash), 'HASHED_GUID', \(guid.value), \(dob?.value), \(now), \(now))
                ON CONFLICT DO NOTHING RETURNING id
                """
            )
            let inserted = try await self.count(
                connection,
                """
                WITH added AS (
                    INSERT INTO registered_key (key_hash, session_id) SELECT key, \(id) FROM unnest(\(keys)::text[]) AS key
                    ON CONFLICT DO NOTHING RETURNING 1
                ) SELECT count(*) FROM added
                """
            )
            guard inserted == keys.count else { throw Rollback(outcome: RegistrationOutcome.keyUnavailable) }
            return try await self.countRegistration(connection, now: now, dailyCap: dailyCap)
        }
    }

    /// A session for a teleTAN, which is marked redeemed in the same transaction; only an unredeemed, unexpired
    /// teleTAN qualifies, and the row lock lets exactly one of concurrent registrations have it. The teleTAN is looked up
    /// in every form it may be stored in (one statement over all candidates); a row matches a candidate only with the
    /// candidate's key id (NULL: the unpeppered SHA-256). The session keeps the hash of the row it redeemed, whichever key
    /// computed it, so `app_session_teletan_unique` holds one value per teleTAN across rotations.
    func registerTeleTAN(
        tokenHash: String,
        candidates: [TeleTANDigest],
        now: Date,
        dailyCap: Int
    ) async throws -> RegistrationOutcome {
        let hashes = candidates.map(\.hash)
        // '' stands for NULL: a key id is never empty (the column's check).
        let keyIDs = candidates.map { $0.keyID ?? "" }
        return try await self.transaction { connection in
            let rows = try await connection.query(
                """
                UPDATE tele_tan SET redeemed_at = \(now)
                FROM unnest(\(hashes)::text[], \(keyIDs)::text[]) AS candidate (hash, key_id)
                WHERE tele_tan.tele_tan_hash = candidate.hash AND coalesce(tele_tan.pepper_id, '') = candidate.key_id
                  AND tele_tan.redeemed_at IS NULL AND tele_tan.valid_until > \(now)
                RETURNING tele_tan.type, tele_tan.tele_tan_hash
                """,
                logger: self.logger
            )
            var redeemed: (type: String, hash: String)?
            for try await (type, hash) in rows.decode((String, String).self) { redeemed = (type, hash) }
            guard let redeemed else { throw Rollback(outcome: RegistrationOutcome.keyUnavailable) }
            _ = try await self.insertSession(
                connection,
                tokenHash: tokenHash,
                """
                INSERT INTO app_session (registration_token_hash, source, tele_tan_hash, teletan_type, created_at, updated_at)
                VALUES (\(tokenHash), 'TELETAN', \(redeemed.hash), \(redeemed.type), \(now), \(now))
                ON CONFLICT DO NOTHING RETURNING id
                """
            )
            return try await self.countRegistration(connection, now: now, dailyCap: dailyCap)
        }
    }

    /// Counts the registration on its UTC day, as the transaction's last statement (the day's row stays locked
    /// until the commit, so it is held briefly): `.registered`, or a rollback with `.dailyCapReached` when the day
    /// has `dailyCap` already. Only registrations that commit are counted.
    private func countRegistration(
        _ connection: PostgresConnection,
        now: Date,
        dailyCap: Int
    ) async throws -> RegistrationOutcome {
        let day = RegistrationDay.start(of: now)
        let counted = try await self.count(
            connection,
            """
            WITH counted AS (
                INSERT INTO registration_day AS d (day, created) VALUES ((\(day) AT TIME ZONE 'UTC')::date, 1)
                ON CONFLICT (day) DO UPDATE SET created = d.created + 1 WHERE d.created < \(Int64(dailyCap))
                RETURNING 1
            ) SELECT count(*) FROM counted
            """
        )
        guard counted == 1, dailyCap > 0 else { throw Rollback(outcome: RegistrationOutcome.dailyCapReached) }
        return .registered
    }

    /// Runs an `INSERT … ON CONFLICT DO NOTHING RETURNING id`. Conflicts are never raised as errors, because
    /// PostgreSQL would write the conflicting value (a hash) into its log; when nothing was inserted, the token's
    /// hash tells a token collision from a key in use.
    private func insertSession(
        _ connection: PostgresConnection,
        tokenHash: String,
        _ query: PostgresQuery
    ) async throws -> Int64 {
        let rows = try await connection.query(query, logger: self.logger)
        for try await id in rows.decode(Int64.self) { return id }
        let tokens = try await self.count(
            connection,
            "SELECT count(*) FROM app_session WHERE registration_token_hash = \(tokenHash)"
        )
        throw Rollback(outcome: tokens > 0 ? RegistrationOutcome.tokenCollision : .keyUnavailable)
    }

    // MARK: - Sessions and TANs

    func session(tokenHash: String) async throws -> AppSession? {
        let rows = try await self.database.query(
            """
            SELECT id, source, hashed_guid, hashed_guid_dob, teletan_type, tan_counter, created_at
            FROM app_session WHERE registration_token_hash = \(tokenHash)
            """,
            logger: self.logger
        )
        for (id, source, guid, dob, type, counter, createdAt) in try rows.decode(
            (Int64, String, String?, String?, String?, Int32, Date).self
        ) {
            let parsed: AppSession.Source
            switch source {
            case "HASHED_GUID":
                guard let guid = guid.flatMap(HashedGUID.init) else { throw VerificationRepositoryError.invalidRow }
                parsed = .guid(guid, dob: dob.flatMap(DOBHash.init))
            default:
                guard let type = type.flatMap(TeleTANType.init(rawValue:)) else {
                    throw VerificationRepositoryError.invalidRow
                }
                parsed = .teleTAN(type)
            }
            return AppSession(id: id, source: parsed, tanCounter: Int(counter), createdAt: createdAt)
        }
        return nil
    }

    /// Counts the TAN against the session's quota and stores its hash, in one transaction.
    func issueTAN(_ issue: TANIssue) async throws -> TANIssueOutcome {
        let (sessionID, tanHash, teleTANType, now) = (issue.sessionID, issue.tanHash, issue.teleTANType, issue.now)
        let (maxPerSession, validUntil) = (issue.maxPerSession, issue.validUntil)
        return try await self.transaction { connection in
            let counted = try await self.count(
                connection,
                """
                WITH counted AS (
                    UPDATE app_session SET tan_counter = tan_counter + 1, updated_at = \(now)
                    WHERE id = \(sessionID) AND tan_counter < \(Int32(maxPerSession)) RETURNING 1
                ) SELECT count(*) FROM counted
                """
            )
            guard counted == 1 else {
                let exists = try await self.count(
                    connection,
                    "SELECT count(*) FROM app_session WHERE id = \(sessionID)"
                )
                throw Rollback(outcome: exists == 0 ? TANIssueOutcome.sessionGone : .quotaUsed)
            }
            let source = teleTANType == nil ? "CONNECTED_LAB" : "TELETAN"
            let inserted = try await self.count(
                connection,
                """
                WITH added AS (
                    INSERT INTO tan (tan_hash, source, teletan_type, created_at, valid_from, valid_until)
                    VALUES (\(tanHash), \(source), \(teleTANType?.rawValue), \(now), \(now), \(validUntil))
                    ON CONFLICT (tan_hash) DO NOTHING RETURNING 1
                ) SELECT count(*) FROM added
                """
            )
            guard inserted == 1 else { throw Rollback(outcome: TANIssueOutcome.collision) }
            return .issued
        }
    }

    /// Consumes a TAN if it exists, is inside its validity window and was not consumed; returns whether it was,
    /// and the teleTAN type it derives from. One statement, so of concurrent calls exactly one succeeds.
    func consumeTAN(
        hash: String,
        now: Date,
        requiring requirement: TANRequirement,
        submission: UUID?
    ) async throws -> TANConsumption {
        // NULL for any kind; otherwise whether the TAN must (true) or must not (false) be an EVENT teleTAN's.
        let event: Bool? =
            switch requirement {
            case .any: nil
            case .event: true
            case .notEvent: false
            }
        let rows = try await self.database.query(
            """
            UPDATE tan SET consumed_at = \(now), redeemed_by = \(submission)
            WHERE tan_hash = \(hash) AND consumed_at IS NULL AND valid_from <= \(now) AND valid_until > \(now)
              AND (\(event)::boolean IS NULL OR coalesce(teletan_type = 'EVENT', false) = \(event)::boolean)
            RETURNING teletan_type
            """,
            logger: self.logger
        )
        for type in try rows.decode(String?.self) {
            return .consumed(type.flatMap(TeleTANType.init(rawValue:)))
        }
        let state = try await self.database.query(
            """
            SELECT consumed_at IS NOT NULL, redeemed_by, teletan_type, valid_from <= \(now) AND valid_until > \(now)
              FROM tan WHERE tan_hash = \(hash)
            """,
            logger: self.logger
        )
        for (consumed, redeemedBy, type, valid) in try state.decode((Bool, UUID?, String?, Bool).self) {
            let teleTANType = type.flatMap(TeleTANType.init(rawValue:))
            if consumed {
                if let submission, redeemedBy == submission, requirement.admits(teleTANType) {
                    return .consumed(teleTANType)
                }
                return .redeemed(by: redeemedBy)
            }
            return valid && requirement != .any ? .wrongKind : .unavailable
        }
        return .unavailable
    }

    func tanRedemption(hash: String) async throws -> TANRedemption? {
        let rows = try await self.database.query(
            "SELECT consumed_at IS NOT NULL, redeemed_by FROM tan WHERE tan_hash = \(hash)",
            logger: self.logger
        )
        for (consumed, redeemedBy) in try rows.decode((Bool, UUID?).self) {
            return consumed ? .redeemed(by: redeemedBy) : .unused
        }
        return nil
    }

    // MARK: - teleTANs

    /// Creates a teleTAN unless the limit is reached in the window. Creations are serialised by a
    /// transaction-scoped advisory lock, so neither the count nor the collision check (the teleTAN in any of its
    /// forms, under any key) can be overtaken by a concurrent insert.
    func createTeleTAN(_ request: TeleTANRequest) async throws -> TeleTANCreation {
        do {
            return try await self.lockedTeleTANCreation(request)
        } catch let error as PSQLError where error.sqlState == "55P03" {
            // Waiting requests hold pool connections; past the lock timeout they give up rather than starve the pool.
            return .busy
        }
    }

    private func lockedTeleTANCreation(_ request: TeleTANRequest) async throws -> TeleTANCreation {
        // The wait for the lock is bounded by the lock timeout alone: the transaction's statements may run for the lock
        // timeout plus 30 s for the work, so a lock timeout longer than DATABASE_STATEMENT_TIMEOUT still ends in
        // `.busy` (55P03) rather than in a cancelled statement.
        let milliseconds = max(1, Int(request.lockTimeout / .milliseconds(1)))
        return try await self.transaction { connection in
            try await connection.runToEnd(
                """
                SELECT set_config('lock_timeout', \("\(milliseconds)ms"), true),
                       set_config('statement_timeout', \("\(milliseconds + 30_000)ms"), true)
                """,
                logger: self.logger
            )
            try await Self.teleTANIssueLock.lock(connection: connection, logger: self.logger)
            let recent = try await self.count(
                connection,
                "SELECT count(*) FROM tele_tan WHERE created_at > \(request.windowStart)"
            )
            guard recent < request.limit else { return .rateLimited }
            let existing = try await self.count(
                connection,
                """
                SELECT count(*) FROM tele_tan
                JOIN unnest(\(request.candidates.map(\.hash))::text[], \(request.candidates.map { $0.keyID ?? "" })::text[])
                    AS candidate (hash, key_id)
                  ON tele_tan.tele_tan_hash = candidate.hash AND coalesce(tele_tan.pepper_id, '') = candidate.key_id
                """
            )
            guard existing == 0 else { return .collision }
            let inserted = try await self.count(
                connection,
                """
                WITH added AS (
                    INSERT INTO tele_tan (tele_tan_hash, pepper_id, type, created_at, valid_until)
                    VALUES (\(request.digest.hash), \(request.digest.keyID), \(request.type.rawValue), \(request.now),
                            \(request.validUntil))
                    ON CONFLICT (tele_tan_hash) DO NOTHING RETURNING 1
                ) SELECT count(*) FROM added
                """
            )
            guard inserted == 1 else { return .collision }
            if let bearer = request.bearer {
                let spent = try await self.count(
                    connection,
                    """
                    WITH added AS (
                        INSERT INTO spent_bearer_token (token_hash, expires_at) VALUES (\(bearer.hash), \(bearer.expiresAt))
                        ON CONFLICT DO NOTHING RETURNING 1
                    ) SELECT count(*) FROM added
                    """
                )
                guard spent == 1 else { throw Rollback(outcome: TeleTANCreation.replayed) }
            }
            return .created(inWindow: recent + 1)
        }
    }

    // MARK: - Retention

    /// Deletes sessions and TANs created before `cutoff`, TANs that expired unused or were consumed before
    /// `redemptionCutoff`, and teleTANs that expired and no longer count for the rate limit. `nil` when another replica
    /// holds the lock.
    func applyRetention(
        cutoff: Date,
        now: Date,
        rateWindowStart: Date,
        redemptionCutoff: Date
    ) async throws -> VerificationRetentionOutcome? {
        try await Self.retentionLock.withTryLock(client: self.database.client, logger: self.logger) { connection in
            var outcome = VerificationRetentionOutcome()
            outcome.sessions = try await self.count(
                connection,
                "WITH gone AS (DELETE FROM app_session WHERE created_at < \(cutoff) RETURNING 1) SELECT count(*) FROM gone"
            )
            outcome.tans = try await self.count(
                connection,
                """
                WITH gone AS (
                    DELETE FROM tan
                     WHERE created_at < \(cutoff) OR (consumed_at IS NULL AND valid_until <= \(now))
                        OR consumed_at < \(redemptionCutoff)
                    RETURNING 1
                ) SELECT count(*) FROM gone
                """
            )
            try await connection.query("DELETE FROM spent_bearer_token WHERE expires_at <= \(now)", logger: self.logger)
            let cutoffDay = RegistrationDay.start(of: cutoff)
            try await connection.query(
                "DELETE FROM registration_day WHERE day < (\(cutoffDay) AT TIME ZONE 'UTC')::date",
                logger: self.logger
            )
            outcome.teleTANs = try await self.count(
                connection,
                """
                WITH gone AS (
                    DELETE FROM tele_tan WHERE valid_until <= \(now) AND created_at <= \(rateWindowStart) RETURNING 1
                ) SELECT count(*) FROM gone
                """
            )
            return outcome
        }
    }

    // MARK: - Helpers

    private func count(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> Int {
        let rows = try await connection.query(query, logger: self.logger)
        for try await value in rows.decode(Int.self) { return value }
        return 0
    }

    /// `withTransaction` with the closure's own error rethrown as it was thrown, and a `Rollback` returned as the
    /// outcome it carries (after the rollback).
    private func transaction<Outcome: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Outcome
    ) async throws -> Outcome {
        do {
            return try await rethrowingTransactionCause {
                try await self.database.withTransaction(logger: self.logger, body)
            }
        } catch let rollback as Rollback<Outcome> {
            return rollback.outcome
        }
    }
}
