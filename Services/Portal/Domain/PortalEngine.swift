// Login with password and second factor, sessions, password change and teleTAN issuance, with the audit trail.

import Crypto
import ENCrypto
import ENServiceKit
import Foundation
import HummingbirdBcrypt
import Logging

/// A new session's cookie token and CSRF token; only their hashes are stored.
struct IssuedSession: Sendable {
    var token: String
    var csrf: String
}

/// What a login or second-factor attempt led to. Every failure reads the same to the user, whether the name exists,
/// the password was wrong or the account is locked.
enum LoginOutcome: Sendable, Equatable {
    case next(token: String, csrf: String)
    case refused
}

enum TeleTANIssueOutcome: Sendable, Equatable {
    case issued(teleTAN: String, validUntil: Date)
    /// The officer's own interval: the seconds left.
    case tooSoon(seconds: Int)
    case serverRateLimited
    case forbidden
    case unknownAuthority
    case unavailable
}

/// The portal's rules, on top of the repository and verification-service.
struct PortalEngine: Sendable {
    let repository: any PortalRepository
    let teleTANs: any TeleTANClient
    let signer: PortalJWTSigner
    /// Seals and opens the officers' TOTP secrets (`TOTP_KEY_FILE`).
    let totpBox: TOTPSecretBox
    let policy: PortalPolicy
    let authorities: [HealthAuthority]
    let clock: WallClock
    let logger: Logger
    let metrics: PortalMetrics

    /// A hash verified when no password is checked (an unknown name, a locked account), with the cost of real
    /// hashes (`BCRYPT_COST`), so that such a refusal takes as long as a wrong password.
    let decoyHash: String

    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Base64URL.encode(bytes)
    }

    static func hash(_ token: String) -> String { SecretHash.sha256Hex(token) }

    // MARK: - Sessions

    /// An anonymous session, so the login form has a CSRF token.
    func anonymousSession() async throws -> IssuedSession {
        try await self.newSession(officerID: nil, stage: .anonymous, createdAt: self.clock.now)
    }

    private func newSession(
        officerID: Int64?,
        stage: PortalSession.Stage,
        createdAt: Date
    ) async throws -> IssuedSession {
        let session = IssuedSession(token: Self.randomToken(), csrf: Self.randomToken())
        try await self.repository.createSession(
            PortalSession(
                tokenHash: Self.hash(session.token),
                csrfHash: Self.hash(session.csrf),
                officerID: officerID,
                stage: stage,
                createdAt: createdAt,
                lastSeenAt: self.clock.now
            )
        )
        return session
    }

    /// The live session of a cookie, touched; `nil` when unknown or past its limits (then it is deleted).
    func session(token: String?) async throws -> PortalSession? {
        guard let token, !token.isEmpty, let session = try await self.repository.session(tokenHash: Self.hash(token))
        else {
            return nil
        }
        let now = self.clock.now
        let idle = now.timeIntervalSince(session.lastSeenAt)
        let age = now.timeIntervalSince(session.createdAt)
        let expired =
            switch session.stage {
            case .anonymous, .password: age > self.policy.secondFactorTimeout.timeInterval
            case .authenticated:
                age > self.policy.sessionLifetime.timeInterval || idle > self.policy.sessionIdleTimeout.timeInterval
            }
        if expired {
            try await self.repository.deleteSession(tokenHash: session.tokenHash)
            return nil
        }
        try await self.repository.touchSession(tokenHash: session.tokenHash, now: now)
        return session
    }

    /// The same session under a new id and CSRF token (stage, officer and age kept): a page's form needs the CSRF
    /// token in clear, and only its hash is stored.
    func renew(_ session: PortalSession) async throws -> IssuedSession {
        let issued = IssuedSession(token: Self.randomToken(), csrf: Self.randomToken())
        try await self.repository.deleteSession(tokenHash: session.tokenHash)
        var renewed = session
        renewed.tokenHash = Self.hash(issued.token)
        renewed.csrfHash = Self.hash(issued.csrf)
        renewed.lastSeenAt = self.clock.now
        try await self.repository.createSession(renewed)
        return issued
    }

    /// Ends a session without an audit line (an anonymous one replaced by a fresh one).
    func discard(_ session: PortalSession) async throws {
        try await self.repository.deleteSession(tokenHash: session.tokenHash)
    }

    /// Whether `csrf` is the session's token (constant time).
    func checkCSRF(_ csrf: String?, session: PortalSession) -> Bool {
        guard let csrf else { return false }
        return ConstantTime.equals(Array(Self.hash(csrf).utf8), Array(session.csrfHash.utf8))
    }

    func logout(session: PortalSession) async throws {
        try await self.repository.deleteSession(tokenHash: session.tokenHash)
        if let id = session.officerID, let officer = try await self.repository.officer(id: id) {
            try await self.audit(officer.username, "logout")
        }
    }

    // MARK: - Login

    /// The password step. On success the anonymous session is replaced by a new one (new id: no fixation) that waits
    /// for the second factor. The attempt is claimed before the password is checked (`claimAttempt`), so a locked
    /// account checks no password at all and parallel guesses cannot outrun the lock; a refused claim still costs a
    /// bcrypt, so that it takes as long as a check.
    func login(username: String, password: String, session: PortalSession) async throws -> LoginOutcome {
        let now = self.clock.now
        guard PasswordRules.isPrintableName(username) else {
            _ = try await PasswordHasher.verify(password, hash: self.decoyHash)
            try await self.audit("-", "login_failed", "user name with control characters")
            return .refused
        }
        guard let officer = try await self.repository.officer(named: username.lowercased()) else {
            _ = try await PasswordHasher.verify(password, hash: self.decoyHash)
            try await self.audit(username.prefix(64).lowercased(), "login_failed", "unknown user")
            return .refused
        }
        guard case .granted(let locksNow) = try await self.claimAttempt(officer) else {
            _ = try await PasswordHasher.verify(password, hash: self.decoyHash)
            try await self.audit(officer.username, "login_refused", officer.disabled ? "disabled" : "locked")
            return .refused
        }
        // A password with a control character is wrong (bcrypt would stop at a NUL), after the same bcrypt as any.
        let matches = try await PasswordHasher.verify(password, hash: officer.passwordHash)
        guard matches, SecretText.isClean(password) else {
            try await self.failed(officer, locksNow: locksNow, "login_failed", "wrong password")
            return .refused
        }
        try await self.repository.deleteSession(tokenHash: session.tokenHash)
        let next = try await self.newSession(officerID: officer.id, stage: .password, createdAt: now)
        try await self.audit(officer.username, "password_accepted")
        return .next(token: next.token, csrf: next.csrf)
    }

    /// The second factor: a code of the officer's secret, within ±1 step, not used before. Success gives an
    /// authenticated session with a new id. A wrong code counts toward the lockout like a wrong password.
    /// The secret is opened before the attempt is claimed: a secret that no configured key opens is a fault of the
    /// deployment, not a guess, and does not count as one. A secret in clear or under an older key is sealed
    /// under the current key once the code was right (the start-up pass, `sealTOTPSecrets`, does the same).
    func secondFactor(code: String, session: PortalSession) async throws -> LoginOutcome {
        guard session.stage == .password, let id = session.officerID,
            let officer = try await self.repository.officer(id: id)
        else { return .refused }
        let now = self.clock.now
        guard let secret = self.openTOTPSecret(of: officer) else {
            try await self.audit(officer.username, "totp_unavailable", "the secret cannot be opened")
            return .refused
        }
        guard case .granted(let locksNow) = try await self.claimAttempt(officer) else { return .refused }
        guard
            let step = TOTP(secret: secret).matchingStep(
                code.trimmingCharacters(in: .whitespaces),
                at: now
            ),
            try await self.repository.useTOTPStep(officerID: officer.id, step: step)
        else {
            try await self.failed(officer, locksNow: locksNow, "totp_failed", "wrong or used code")
            return .refused
        }
        try await self.repository.clearFailures(officerID: officer.id)
        if self.totpBox.needsSealing(officer.totpSecret) {
            _ = try await self.reseal(officer, secret: secret)
        }
        try await self.repository.deleteSession(tokenHash: session.tokenHash)
        let next = try await self.newSession(officerID: officer.id, stage: .authenticated, createdAt: now)
        try await self.audit(officer.username, "login_succeeded")
        return .next(token: next.token, csrf: next.csrf)
    }

    // MARK: - TOTP secrets at rest

    /// Seals every TOTP secret still in clear, and seals anew every one sealed under a key that is no longer the
    /// current one (after a rotation), so the old key can be dropped once this has run. Each is one conditional update
    /// (`replaceTOTPSecret`): replicas running this together seal each secret once, and a secret reset meanwhile is
    /// left alone. A secret no configured key opens is logged (the officer's id and the key id) and skipped.
    func sealTOTPSecrets() async throws -> TOTPSealing {
        var result = TOTPSealing()
        for officer in try await self.repository.allOfficers() where self.totpBox.needsSealing(officer.totpSecret) {
            guard let secret = self.openTOTPSecret(of: officer) else {
                result.unopenable += 1
                continue
            }
            if try await self.reseal(officer, secret: secret) { result.sealed += 1 }
        }
        if result != TOTPSealing() {
            self.logger.info(
                "TOTP secrets sealed",
                metadata: [
                    "totp.sealed": "\(result.sealed)", "totp.unopenable": "\(result.unopenable)",
                    "totp.key_id": "\(self.totpBox.keys.current.id)",
                ]
            )
        }
        return result
    }

    /// The officer's TOTP secret in clear, or `nil` (logged with the officer's id and the reason, never the secret)
    /// when no configured key opens it.
    private func openTOTPSecret(of officer: Officer) -> [UInt8]? {
        do {
            return try self.totpBox.open(officer.totpSecret, username: officer.username)
        } catch {
            self.logger.error(
                "An officer's TOTP secret cannot be opened",
                metadata: ["officer.id": "\(officer.id)", "reason": "\(error.description)"]
            )
            return nil
        }
    }

    /// Replaces the officer's stored secret by `secret` sealed under the current key, if the row still holds what
    /// `officer` was read with.
    private func reseal(_ officer: Officer, secret: [UInt8]) async throws -> Bool {
        try await self.repository.replaceTOTPSecret(
            officerID: officer.id,
            expected: officer.totpSecret,
            with: try self.totpBox.seal(secret, username: officer.username)
        )
    }

    /// One attempt at one of the officer's secrets, counted before it is checked.
    private func claimAttempt(_ officer: Officer) async throws -> AttemptClaim {
        let now = self.clock.now
        return try await self.repository.claimAttempt(
            officerID: officer.id,
            maxFailures: self.policy.maxFailedLogins,
            lockedUntil: now.addingTimeInterval(self.policy.lockDuration.timeInterval),
            now: now
        )
    }

    /// Audits a failed attempt, and the lock when this attempt set it.
    private func failed(_ officer: Officer, locksNow: Bool, _ action: String, _ details: String) async throws {
        try await self.audit(officer.username, action, details)
        if locksNow {
            try await self.audit(
                officer.username,
                "account_locked",
                "for \(Int(self.policy.lockDuration.timeInterval)) s"
            )
        }
    }

    /// The officer of an authenticated session.
    func officer(of session: PortalSession) async throws -> Officer? {
        guard session.stage == .authenticated, let id = session.officerID,
            let officer = try await self.repository.officer(id: id), !officer.disabled
        else {
            return nil
        }
        return officer
    }

    // MARK: - Password

    enum PasswordChange: Sendable, Equatable { case changed, wrongPassword, tooWeak, mismatch, locked }

    /// A new password. A wrong current password counts toward the lockout like a failed login; a change ends every
    /// other session of the officer, so that whoever knew the old password is logged out.
    func changePassword(
        officer: Officer,
        session: PortalSession,
        current: String,
        new: String,
        repeated: String
    ) async throws -> PasswordChange {
        guard case .granted(let locksNow) = try await self.claimAttempt(officer) else { return .locked }
        let matches = try await PasswordHasher.verify(current, hash: officer.passwordHash)
        guard matches, SecretText.isClean(current) else {
            try await self.failed(officer, locksNow: locksNow, "password_change_failed", "wrong current password")
            return .wrongPassword
        }
        try await self.repository.clearFailures(officerID: officer.id)
        guard new == repeated else { return .mismatch }
        guard PasswordRules.acceptable(new, username: officer.username) else { return .tooWeak }
        try await self.repository.setPassword(
            officerID: officer.id,
            passwordHash: try await PasswordHasher.hash(new, cost: self.policy.bcryptCost)
        )
        try await self.repository.deleteSessions(ofOfficer: officer.id, except: session.tokenHash)
        try await self.audit(officer.username, "password_changed")
        return .changed
    }

    // MARK: - teleTANs

    /// A teleTAN of `kind`: the role is checked, then the officer's own interval (a row update every replica sees),
    /// then verification-service is asked with a 60-second token carrying the officer's roles. The teleTAN is
    /// returned for display only: it is never stored or logged; the audit names type and authority.
    func issueTeleTAN(officer: Officer, kind: TeleTANKind, authority: String?) async throws -> TeleTANIssueOutcome {
        let outcome = try await self.teleTAN(officer: officer, kind: kind, authority: authority)
        if case .issued = outcome {} else { self.metrics.teleTANRefused() }
        return outcome
    }

    private func teleTAN(officer: Officer, kind: TeleTANKind, authority: String?) async throws -> TeleTANIssueOutcome {
        guard officer.has(kind.requiredRole) else { return .forbidden }
        var authorityName = ""
        if kind == .event {
            guard let chosen = self.authorities.first(where: { $0.id == authority }) else { return .unknownAuthority }
            authorityName = chosen.name
        }
        let now = self.clock.now
        let interval = self.policy.teleTANInterval.timeInterval
        if let last = try await self.repository.claimTeleTANSlot(officerID: officer.id, now: now, interval: interval) {
            return .tooSoon(seconds: max(1, Int((interval - now.timeIntervalSince(last)).rounded(.up))))
        }
        let token = try self.signer.token(subject: officer.username, roles: officer.roles, now: now)
        let answer: TeleTANAnswer
        do {
            answer = try await self.teleTANs.createTeleTAN(kind: kind, bearer: token)
        } catch {
            try await self.repository.releaseTeleTANSlot(officerID: officer.id, claimedAt: now)
            return .unavailable
        }
        switch answer {
        case .created(let teleTAN):
            let details = kind == .event ? "type=EVENT authority=\(authorityName)" : "type=TEST"
            try await self.audit(officer.username, "teletan_issued", details)
            let validity: TimeInterval = kind == .event ? 2 * 86_400 : 3600
            return .issued(teleTAN: teleTAN, validUntil: now.addingTimeInterval(validity))
        case .rateLimited:
            try await self.repository.releaseTeleTANSlot(officerID: officer.id, claimedAt: now)
            return .serverRateLimited
        case .refused(let status):
            self.logger.error(
                "verification-service refused the portal's teleTAN request",
                metadata: ["status": "\(status)"]
            )
            try await self.repository.releaseTeleTANSlot(officerID: officer.id, claimedAt: now)
            return .unavailable
        }
    }

    func audit(_ username: some StringProtocol, _ action: String, _ details: String = "") async throws {
        try await self.repository.audit(
            AuditEvent(at: self.clock.now, username: String(username), action: action, details: details)
        )
        self.metrics.audited(action)
    }
}

/// What one pass of `PortalEngine.sealTOTPSecrets` did.
struct TOTPSealing: Sendable, Equatable {
    /// Secrets sealed (from clear) or sealed anew (under the current key).
    var sealed = 0
    /// Secrets no configured key opens.
    var unopenable = 0
}

/// A health authority an EVENT teleTAN can be issued for (`health-authorities.json`: `[{"name", "nr"}]`).
struct HealthAuthority: Sendable, Equatable, Decodable {
    var name: String
    var id: String

    enum CodingKeys: String, CodingKey {
        case name
        case id = "nr"
    }
}

/// What a new password must be, and what a user name may contain.
enum PasswordRules {
    static let minimumLength = 12

    /// Whether `name` has no control, format or line-separator characters (escape sequences, bidi overrides), so
    /// that it is safe to store in the audit trail and print.
    static func isPrintableName(_ name: String) -> Bool {
        name.unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: false
            default: true
            }
        }
    }

    /// 12 to 128 characters, none a control character, and not the user name.
    static func acceptable(_ password: String, username: String) -> Bool {
        password.count >= self.minimumLength && password.count <= 128 && SecretText.isClean(password)
            && password.lowercased() != username.lowercased()
    }
}
