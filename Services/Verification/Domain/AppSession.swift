// What the verification rules read from and get back from the repository.

import Foundation

/// A registration session as the rules need it.
struct AppSession: Sendable, Equatable {
    enum Source: Sendable, Equatable {
        case guid(HashedGUID, dob: DOBHash?)
        case teleTAN(TeleTANType)
    }

    var id: Int64
    var source: Source
    var tanCounter: Int
    var createdAt: Date
}

enum RegistrationOutcome: Sendable, Equatable {
    case registered
    /// The GUID or DOB hash is registered already, or the teleTAN is unknown, expired or redeemed.
    case keyUnavailable
    /// The new token's hash exists already (a UUID collision): retry with another token.
    case tokenCollision
}

enum TANIssueOutcome: Sendable, Equatable {
    case issued
    case quotaUsed
    case sessionGone
    /// The new TAN's hash exists already: retry with another TAN.
    case collision
}

enum TeleTANCreation: Sendable, Equatable {
    /// Created; `inWindow` teleTANs (this one included) were created in the rate window.
    case created(inWindow: Int)
    case rateLimited
    case collision
    /// The creation lock was not granted within the lock timeout.
    case busy
}

struct VerificationRetentionOutcome: Sendable, Equatable {
    var sessions = 0
    var tans = 0
    var teleTANs = 0
}
