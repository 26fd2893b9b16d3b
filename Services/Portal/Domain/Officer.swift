// Who uses the portal: officers, their sessions, and the audit trail of what they did.

import Foundation

/// An officer as the portal reads it.
struct Officer: Sendable, Equatable {
    var id: Int64
    var username: String
    var passwordHash: String
    var roles: [String]
    var totpSecret: [UInt8]
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

/// An officer to add, as the administrator's command creates one.
struct NewOfficer: Sendable, Equatable {
    /// Lower case.
    var username: String
    /// bcrypt.
    var passwordHash: String
    var roles: [String]
    /// 20 bytes.
    var totpSecret: [UInt8]
}
