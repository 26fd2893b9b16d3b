// Officers, sessions and the audit trail in memory, for route tests and runs without PostgreSQL.

import ENCrypto
import Foundation

/// The rules of the PostgreSQL repository over dictionaries, its schema's checks included (a name or TOTP secret the
/// table refuses, a session whose token exists or whose officer does not); the actor makes every method atomic.
actor InMemoryPortalRepository: PortalRepository {
    private struct Record {
        var officer: Officer
        var totpLastStep: Int64 = 0
        var lastTeleTANAt: Date?
    }

    private var officers: [Int64: Record] = [:]
    private var sessions: [String: PortalSession] = [:]
    private var events: [AuditEvent] = []
    private var lastID: Int64 = 0

    init() {}

    func addOfficer(_ new: NewOfficer, now: Date) throws -> Bool {
        guard NewOfficer.isValidUsername(new.username) else {
            throw PortalConstraintViolation(description: "officer")
        }
        try Self.check(new.totpSecret)
        guard !self.officers.values.contains(where: { $0.officer.username == new.username }) else { return false }
        self.lastID += 1
        let officer = Officer(
            id: self.lastID,
            username: new.username,
            passwordHash: new.passwordHash,
            roles: new.roles,
            totpSecret: new.totpSecret,
            failedLogins: 0,
            lockedUntil: nil,
            disabled: false
        )
        self.officers[self.lastID] = Record(officer: officer)
        return true
    }

    func officer(named username: String) -> Officer? {
        self.officers.values.first { $0.officer.username == username }?.officer
    }

    func officer(id: Int64) -> Officer? {
        self.officers[id]?.officer
    }

    func allOfficers() -> [Officer] {
        self.officers.values.map(\.officer).sorted { $0.username < $1.username }
    }

    func claimAttempt(officerID: Int64, maxFailures: Int, lockedUntil: Date, now: Date) -> AttemptClaim {
        guard var officer = self.officers[officerID]?.officer, !officer.disabled,
            officer.lockedUntil.map({ $0 <= now }) ?? true
        else { return .refused }
        let locks = officer.failedLogins + 1 >= maxFailures
        officer.failedLogins = locks ? 0 : officer.failedLogins + 1
        if locks { officer.lockedUntil = lockedUntil }
        self.officers[officerID]?.officer = officer
        return .granted(locksNow: locks)
    }

    func clearFailures(officerID: Int64) {
        self.officers[officerID]?.officer.failedLogins = 0
        self.officers[officerID]?.officer.lockedUntil = nil
    }

    func useTOTPStep(officerID: Int64, step: Int64) -> Bool {
        guard let record = self.officers[officerID], record.totpLastStep < step else { return false }
        self.officers[officerID]?.totpLastStep = step
        return true
    }

    func setPassword(officerID: Int64, passwordHash: String) {
        self.officers[officerID]?.officer.passwordHash = passwordHash
    }

    func disable(username: String) -> Bool {
        guard let id = self.officer(named: username)?.id else { return false }
        self.officers[id]?.officer.disabled = true
        self.endSessions(of: id)
        return true
    }

    func resetTOTP(username: String, secret: StoredTOTPSecret) throws -> Bool {
        try Self.check(secret)
        guard let id = self.officer(named: username)?.id else { return false }
        self.officers[id]?.officer.totpSecret = secret
        self.endSessions(of: id)
        return true
    }

    func replaceTOTPSecret(
        officerID: Int64,
        expected: StoredTOTPSecret,
        with replacement: StoredTOTPSecret
    ) throws -> Bool {
        try Self.check(replacement)
        guard self.officers[officerID]?.officer.totpSecret == expected else { return false }
        self.officers[officerID]?.officer.totpSecret = replacement
        return true
    }

    func claimTeleTANSlot(officerID: Int64, now: Date, interval: TimeInterval) -> Date? {
        guard let record = self.officers[officerID] else { return now }
        if let last = record.lastTeleTANAt, last > now.addingTimeInterval(-interval) { return last }
        self.officers[officerID]?.lastTeleTANAt = now
        return nil
    }

    func releaseTeleTANSlot(officerID: Int64, claimedAt: Date) {
        if self.officers[officerID]?.lastTeleTANAt == claimedAt { self.officers[officerID]?.lastTeleTANAt = nil }
    }

    func createSession(_ session: PortalSession) throws {
        guard self.sessions[session.tokenHash] == nil else {
            throw PortalConstraintViolation(description: "portal_session.token_hash")
        }
        guard session.officerID.map({ self.officers[$0] != nil }) ?? true else {
            throw PortalConstraintViolation(description: "portal_session.officer_id")
        }
        self.sessions[session.tokenHash] = session
    }

    func session(tokenHash: String) -> PortalSession? {
        self.sessions[tokenHash]
    }

    func touchSession(tokenHash: String, now: Date) {
        self.sessions[tokenHash]?.lastSeenAt = now
    }

    func deleteSessions(ofOfficer officerID: Int64, except tokenHash: String) {
        self.sessions = self.sessions.filter { $0.value.officerID != officerID || $0.key == tokenHash }
    }

    func deleteSession(tokenHash: String) {
        self.sessions[tokenHash] = nil
    }

    func deleteExpiredSessions(idleBefore: Date, createdBefore: Date) {
        self.sessions = self.sessions.filter {
            $0.value.lastSeenAt >= idleBefore && $0.value.createdAt >= createdBefore
        }
    }

    func audit(_ event: AuditEvent) {
        self.events.append(event)
    }

    func auditEvents(since: Date) -> [AuditEvent] {
        self.events.filter { $0.at >= since }
    }

    /// The schema's checks of the secret's columns: 20 bytes in clear, or a 48-byte sealed box under a valid key id.
    private static func check(_ secret: StoredTOTPSecret) throws {
        let valid =
            switch secret {
            case .clear(let bytes): bytes.count == 20
            case .sealed(let keyID, let box): KeyRing.isValidID(keyID) && box.count == TOTPSecretBox.sealedLength
            }
        guard valid else { throw PortalConstraintViolation(description: "officer.totp") }
    }

    private func endSessions(of officerID: Int64) {
        self.sessions = self.sessions.filter { $0.value.officerID != officerID }
    }
}

/// A row the PostgreSQL schema's checks or keys would refuse.
struct PortalConstraintViolation: Error, CustomStringConvertible {
    let description: String
}
