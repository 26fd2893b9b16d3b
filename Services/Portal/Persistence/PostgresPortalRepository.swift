// Officers, sessions and the audit trail in the `portal` database on PostgreSQL.

import ENCrypto
import ENPersistence
import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The portal's queries. Every statement binds its values; every rule that must hold across replicas (a TOTP code
/// works once, the officer's teleTAN interval, lockout counting) is one conditional statement.
struct PostgresPortalRepository: PortalRepository {
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

    // MARK: - Officers

    /// Adds an officer; `false` when the name is taken.
    func addOfficer(_ officer: NewOfficer, now: Date) async throws -> Bool {
        let secret = Columns(officer.totpSecret)
        return try await self.count(
            """
            WITH added AS (
                INSERT INTO officer (username, password_hash, roles, totp_secret, totp_key_id, totp_sealed, created_at)
                VALUES (\(officer.username), \(officer.passwordHash), \(officer.roles),
                        \(secret.clear), \(secret.keyID), \(secret.sealed), \(now))
                ON CONFLICT (username) DO NOTHING RETURNING 1
            ) SELECT count(*) FROM added
            """
        ) == 1
    }

    func officer(named username: String) async throws -> Officer? {
        try await self.officers(
            """
            SELECT \(unescaped: Self.officerColumns)
              FROM officer WHERE username = \(username)
            """
        ).first
    }

    func officer(id: Int64) async throws -> Officer? {
        try await self.officers(
            """
            SELECT \(unescaped: Self.officerColumns)
              FROM officer WHERE id = \(id)
            """
        ).first
    }

    func allOfficers() async throws -> [Officer] {
        try await self.officers(
            "SELECT \(unescaped: Self.officerColumns) FROM officer ORDER BY username"
        )
    }

    func claimAttempt(officerID: Int64, maxFailures: Int, lockedUntil: Date, now: Date) async throws -> AttemptClaim {
        let rows = try await self.database.query(
            """
            UPDATE officer
               SET failed_logins = CASE WHEN failed_logins + 1 >= \(maxFailures) THEN 0 ELSE failed_logins + 1 END,
                   locked_until = CASE WHEN failed_logins + 1 >= \(maxFailures) THEN \(lockedUntil) ELSE locked_until END
             WHERE id = \(officerID) AND NOT disabled AND (locked_until IS NULL OR locked_until <= \(now))
            RETURNING failed_logins = 0
            """,
            logger: self.logger
        )
        for locksNow in try rows.decode(Bool.self) { return .granted(locksNow: locksNow) }
        return .refused
    }

    func clearFailures(officerID: Int64) async throws {
        try await self.database.query(
            "UPDATE officer SET failed_logins = 0, locked_until = NULL WHERE id = \(officerID)",
            logger: self.logger
        )
    }

    /// Records `step` as used, unless it or a later one was used already (a code works once, on every replica).
    func useTOTPStep(officerID: Int64, step: Int64) async throws -> Bool {
        try await self.count(
            """
            WITH used AS (
                UPDATE officer SET totp_last_step = \(step) WHERE id = \(officerID) AND totp_last_step < \(step) RETURNING 1
            ) SELECT count(*) FROM used
            """
        ) == 1
    }

    func setPassword(officerID: Int64, passwordHash: String) async throws {
        try await self.database.query(
            "UPDATE officer SET password_hash = \(passwordHash) WHERE id = \(officerID)",
            logger: self.logger
        )
    }

    /// Disables an officer and ends their sessions; `false` for an unknown name.
    func disable(username: String) async throws -> Bool {
        try await self.count(
            """
            WITH disabled AS (UPDATE officer SET disabled = true WHERE username = \(username) RETURNING id),
                 ended AS (DELETE FROM portal_session WHERE officer_id IN (SELECT id FROM disabled))
            SELECT count(*) FROM disabled
            """
        ) == 1
    }

    /// A new TOTP secret; the used-step marker is kept, so old codes stay unusable.
    func resetTOTP(username: String, secret: StoredTOTPSecret) async throws -> Bool {
        let new = Columns(secret)
        return try await self.count(
            """
            WITH reset AS (
                UPDATE officer SET totp_secret = \(new.clear), totp_key_id = \(new.keyID), totp_sealed = \(new.sealed)
                 WHERE username = \(username) RETURNING id
            ),
            ended AS (DELETE FROM portal_session WHERE officer_id IN (SELECT id FROM reset))
            SELECT count(*) FROM reset
            """
        ) == 1
    }

    /// One conditional update: the row must still hold `expected` in every column of the secret.
    func replaceTOTPSecret(
        officerID: Int64,
        expected: StoredTOTPSecret,
        with replacement: StoredTOTPSecret
    ) async throws -> Bool {
        let (old, new) = (Columns(expected), Columns(replacement))
        return try await self.count(
            """
            WITH replaced AS (
                UPDATE officer SET totp_secret = \(new.clear), totp_key_id = \(new.keyID), totp_sealed = \(new.sealed)
                 WHERE id = \(officerID) AND totp_secret IS NOT DISTINCT FROM \(old.clear)::bytea
                   AND totp_key_id IS NOT DISTINCT FROM \(old.keyID)::text
                   AND totp_sealed IS NOT DISTINCT FROM \(old.sealed)::bytea
                RETURNING 1
            ) SELECT count(*) FROM replaced
            """
        ) == 1
    }

    /// Takes the officer's teleTAN slot: succeeds when the last teleTAN is at least `interval` old, for every replica
    /// at once. Returns `nil` on success, else the previous issuance time.
    func claimTeleTANSlot(officerID: Int64, now: Date, interval: TimeInterval) async throws -> Date? {
        let claimed = try await self.count(
            """
            WITH claimed AS (
                UPDATE officer SET last_teletan_at = \(now)
                 WHERE id = \(officerID) AND (last_teletan_at IS NULL OR last_teletan_at <= \(now.addingTimeInterval(-interval)))
                RETURNING 1
            ) SELECT count(*) FROM claimed
            """
        )
        guard claimed == 0 else { return nil }
        let rows = try await self.database.query(
            "SELECT last_teletan_at FROM officer WHERE id = \(officerID)",
            logger: self.logger
        )
        for last in try rows.decode(Date?.self) { return last ?? now }
        return now
    }

    /// Gives the slot back after verification-service failed, so the officer can try again at once.
    func releaseTeleTANSlot(officerID: Int64, claimedAt: Date) async throws {
        try await self.database.query(
            "UPDATE officer SET last_teletan_at = NULL WHERE id = \(officerID) AND last_teletan_at = \(claimedAt)",
            logger: self.logger
        )
    }

    // MARK: - Sessions

    func createSession(_ session: PortalSession) async throws {
        try await self.database.query(
            """
            INSERT INTO portal_session (token_hash, csrf_hash, officer_id, stage, created_at, last_seen_at)
            VALUES (\(session.tokenHash), \(session.csrfHash), \(session.officerID), \(session.stage.rawValue),
                    \(session.createdAt), \(session.lastSeenAt))
            """,
            logger: self.logger
        )
    }

    func session(tokenHash: String) async throws -> PortalSession? {
        let rows = try await self.database.query(
            "SELECT token_hash, csrf_hash, officer_id, stage, created_at, last_seen_at FROM portal_session WHERE token_hash = \(tokenHash)",
            logger: self.logger
        )
        for (token, csrf, officer, stage, created, seen) in try rows.decode(
            (String, String, Int64?, String, Date, Date).self
        ) {
            guard let stage = PortalSession.Stage(rawValue: stage) else { return nil }
            return PortalSession(
                tokenHash: token,
                csrfHash: csrf,
                officerID: officer,
                stage: stage,
                createdAt: created,
                lastSeenAt: seen
            )
        }
        return nil
    }

    func touchSession(tokenHash: String, now: Date) async throws {
        try await self.database.query(
            "UPDATE portal_session SET last_seen_at = \(now) WHERE token_hash = \(tokenHash)",
            logger: self.logger
        )
    }

    func deleteSessions(ofOfficer officerID: Int64, except tokenHash: String) async throws {
        try await self.database.query(
            "DELETE FROM portal_session WHERE officer_id = \(officerID) AND token_hash <> \(tokenHash)",
            logger: self.logger
        )
    }

    func deleteSession(tokenHash: String) async throws {
        try await self.database.query("DELETE FROM portal_session WHERE token_hash = \(tokenHash)", logger: self.logger)
    }

    /// Removes sessions idle since `idleBefore` or created before `createdBefore`.
    func deleteExpiredSessions(idleBefore: Date, createdBefore: Date) async throws {
        try await self.database.query(
            "DELETE FROM portal_session WHERE last_seen_at < \(idleBefore) OR created_at < \(createdBefore)",
            logger: self.logger
        )
    }

    // MARK: - Audit

    func audit(_ event: AuditEvent) async throws {
        try await self.database.query(
            "INSERT INTO audit_event (at, username, action, details) VALUES (\(event.at), \(event.username), \(event.action), \(event.details))",
            logger: self.logger
        )
    }

    func auditEvents(since: Date) async throws -> [AuditEvent] {
        let rows = try await self.database.query(
            "SELECT at, username, action, details FROM audit_event WHERE at >= \(since) ORDER BY id",
            logger: self.logger
        )
        var events: [AuditEvent] = []
        for (at, username, action, details) in try rows.decode((Date, String, String, String).self) {
            events.append(AuditEvent(at: at, username: username, action: action, details: details))
        }
        return events
    }

    // MARK: - Helpers

    /// The columns `officers(_:)` decodes, in its order.
    private static let officerColumns =
        "id, username, password_hash, roles, totp_secret, totp_key_id, totp_sealed, failed_logins, locked_until, disabled"

    private func officers(_ query: PostgresQuery) async throws -> [Officer] {
        let rows = try await self.database.query(query, logger: self.logger)
        var officers: [Officer] = []
        for (id, username, hash, roles, clear, keyID, sealed, failures, locked, disabled)
            in try rows.decode(
                (Int64, String, String, [String], ByteBuffer?, String?, ByteBuffer?, Int32, Date?, Bool).self
            )
        {
            let secret: StoredTOTPSecret
            switch (clear, keyID, sealed) {
            case (.some(let clear), nil, nil): secret = .clear(Array(clear.readableBytesView))
            case (nil, .some(let keyID), .some(let sealed)):
                secret = .sealed(keyID: keyID, box: Array(sealed.readableBytesView))
            default: throw PortalRepositoryError.invalidRow
            }
            officers.append(
                Officer(
                    id: id,
                    username: username,
                    passwordHash: hash,
                    roles: roles,
                    totpSecret: secret,
                    failedLogins: Int(failures),
                    lockedUntil: locked,
                    disabled: disabled
                )
            )
        }
        return officers
    }

    /// A stored secret as the three columns hold it.
    private struct Columns {
        var clear: ByteBuffer?
        var keyID: String?
        var sealed: ByteBuffer?

        init(_ secret: StoredTOTPSecret) {
            switch secret {
            case .clear(let bytes): self.clear = ByteBuffer(bytes: bytes)
            case .sealed(let keyID, let box): (self.keyID, self.sealed) = (keyID, ByteBuffer(bytes: box))
            }
        }
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        var total = 0
        for value in try await self.database.query(query, logger: self.logger).decode(Int64.self) {
            total = Int(value)
        }
        return total
    }
}
