// Who uses the portal: officers, their sessions, and the audit trail of what they did.

import Foundation

/// An officer as the portal reads it.
struct Officer: Sendable, Equatable {
    var id: Int64
    var username: String
    var passwordHash: String
    var roles: [String]
    /// Sealed (`TOTPSecretBox`); in clear only until the start-up sealing reaches the row.
    var totpSecret: StoredTOTPSecret
    var failedLogins: Int
    var lockedUntil: Date?
    var disabled: Bool

    func has(_ role: PortalRole) -> Bool { self.roles.contains(role.rawValue) }
}

/// A session found by its cookie.
struct PortalSession: Sendable, Equatable {
    enum Stage: String, Sendable { case anonymous, password, authenticated }
    var tokenHash: String
    var csrfHash: String
    var officerID: Int64?
    var stage: Stage
    var createdAt: Date
    var lastSeenAt: Date
}

/// One line of the audit trail.
struct AuditEvent: Sendable, Equatable {
    var at: Date
    var username: String
    var action: String
    var details: String
}

/// What claiming an attempt at a secret (password, second factor, current password) gave.
enum AttemptClaim: Sendable, Equatable {
    /// The attempt may go ahead; it counts as a failure until `clearFailures` says otherwise. `locksNow` when this
    /// attempt reached the limit: the account is locked from now on unless the attempt succeeds.
    case granted(locksNow: Bool)
    /// The account is locked, disabled or unknown: no attempt.
    case refused
}

/// An officer to add, as the administrator's command creates one.
struct NewOfficer: Sendable, Equatable {
    /// Lower case.
    var username: String
    /// bcrypt.
    var passwordHash: String
    var roles: [String]
    /// The 20-byte secret, sealed by `TOTPSecretBox`.
    var totpSecret: StoredTOTPSecret

    /// An officer's name: 2–64 characters of a-z, 0-9, '.', '_' and '-', a letter or digit first (the `officer`
    /// table's CHECK).
    static func isValidUsername(_ name: String) -> Bool {
        name.wholeMatch(of: /^[a-z0-9][a-z0-9._-]{1,63}$/) != nil
    }
}
