// Storage of officers, sessions and the audit trail, independent of the database behind it.

import Foundation

/// Where the portal's state lives. Every method is atomic with respect to concurrent calls on every replica.
protocol PortalRepository: Sendable {
    // MARK: Officers

    /// Adds an officer; `false` when the name is taken.
    func addOfficer(_ officer: NewOfficer, now: Date) async throws -> Bool
    func officer(named username: String) async throws -> Officer?
    func officer(id: Int64) async throws -> Officer?
    /// Every officer, by name.
    func allOfficers() async throws -> [Officer]
    /// Claims one attempt at a secret, counted as a failure before the secret is checked, so that parallel attempts
    /// cannot all pass a lock that is not yet set: refused while the account is locked or disabled; the attempt that
    /// reaches `maxFailures` locks it until `lockedUntil` and starts the count again.
    func claimAttempt(officerID: Int64, maxFailures: Int, lockedUntil: Date, now: Date) async throws -> AttemptClaim
    /// After a successful attempt: the count starts again, and a lock the attempt itself set is lifted.
    func clearFailures(officerID: Int64) async throws
    /// Records `step` as used, unless it or a later one was used already (a code works once).
    func useTOTPStep(officerID: Int64, step: Int64) async throws -> Bool
    func setPassword(officerID: Int64, passwordHash: String) async throws
    /// Disables an officer and ends their sessions; `false` for an unknown name.
    func disable(username: String) async throws -> Bool
    /// A new TOTP secret, ending the officer's sessions; the used-step marker is kept, so old codes stay unusable.
    func resetTOTP(username: String, secret: StoredTOTPSecret) async throws -> Bool
    /// Replaces the officer's stored TOTP secret by `replacement` (the same secret sealed anew), only while it is still
    /// `expected`: of concurrent replacements one wins, and a secret reset meanwhile is left alone. Whether it replaced.
    func replaceTOTPSecret(
        officerID: Int64,
        expected: StoredTOTPSecret,
        with replacement: StoredTOTPSecret
    )
        async throws -> Bool
    /// Takes the officer's teleTAN slot when the last teleTAN is at least `interval` old. Returns `nil` on success,
    /// else the previous issuance time.
    func claimTeleTANSlot(officerID: Int64, now: Date, interval: TimeInterval) async throws -> Date?
    /// Gives the slot claimed at `claimedAt` back, so the officer can try again at once.
    func releaseTeleTANSlot(officerID: Int64, claimedAt: Date) async throws

    // MARK: Sessions

    /// Stores a new session (its `lastSeenAt` is when it was created or renewed).
    func createSession(_ session: PortalSession) async throws
    func session(tokenHash: String) async throws -> PortalSession?
    func touchSession(tokenHash: String, now: Date) async throws
    func deleteSession(tokenHash: String) async throws
    /// Ends every session of the officer but the one named (a password change logs out everywhere else).
    func deleteSessions(ofOfficer officerID: Int64, except tokenHash: String) async throws
    /// Removes sessions idle since `idleBefore` or created before `createdBefore`.
    func deleteExpiredSessions(idleBefore: Date, createdBefore: Date) async throws

    // MARK: Audit

    func audit(_ event: AuditEvent) async throws
    /// The events at or after `since`, in the order they were recorded.
    func auditEvents(since: Date) async throws -> [AuditEvent]
}

enum PortalRepositoryError: Error {
    /// A row violates what the schema's checks guarantee.
    case invalidRow
}
