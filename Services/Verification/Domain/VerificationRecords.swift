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

/// The UTC day registrations are counted on.
enum RegistrationDay {
    /// Midnight UTC of `date`'s day (Unix time counts every UTC day as 86,400 seconds).
    static func start(of date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
    }

    /// The next midnight UTC after `date`.
    static func end(of date: Date) -> Date {
        self.start(of: date).addingTimeInterval(86_400)
    }
}

enum RegistrationOutcome: Sendable, Equatable {
    case registered
    /// The GUID or DOB hash is registered already, or the teleTAN is unknown, expired or redeemed.
    case keyUnavailable
    /// The new token's hash exists already (a UUID collision): retry with another token.
    case tokenCollision
    /// The day's registrations reached the daily cap; nothing was stored (a teleTAN stays unredeemed).
    case dailyCapReached
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
    /// The bearer token created a teleTAN already; nothing was created.
    case replayed
}

struct VerificationRetentionOutcome: Sendable, Equatable {
    var sessions = 0
    var tans = 0
    var teleTANs = 0
    /// NHS orders past their lifetimes.
    var nhsOrders = 0
    /// Isolation payment tokens and circuit-breaker approvals past their lifetimes.
    var nhsIsolationPaymentTokens = 0
    var nhsCircuitBreakerRequests = 0
}

/// Which TANs a verification may consume: the caller says which kind it can use, so a TAN of the other kind is left
/// usable instead of being spent and then refused.
enum TANRequirement: Sendable, Equatable {
    /// Any TAN (the reference's behaviour).
    case any
    /// Only a TAN of an EVENT teleTAN (a submission on behalf).
    case event
    /// Any TAN but one of an EVENT teleTAN (a key submission).
    case notEvent

    /// Whether a TAN derived from `type` (`nil`: a lab result's) meets the requirement.
    func admits(_ type: TeleTANType?) -> Bool {
        switch self {
        case .any: true
        case .event: type == .event
        case .notEvent: type != .event
        }
    }
}

/// What consuming a TAN did.
enum TANConsumption: Sendable, Equatable {
    /// Consumed now; the teleTAN type it derives from, if any.
    case consumed(TeleTANType?)
    /// Valid and unused, but not of the kind required: left as it was.
    case wrongKind
    /// Unknown, or outside its validity window.
    case unavailable
    /// Used before by another submission attempt (`nil`: by one that named none).
    case redeemed(by: UUID?)
}

/// What the store knows of a TAN by its hash: whether, and by which submission attempt, it was used.
enum TANRedemption: Sendable, Equatable {
    case unused
    case redeemed(by: UUID?)
}

/// A TAN to store for a session, counted against the session's quota.
struct TANIssue: Sendable, Equatable {
    var sessionID: Int64
    var maxPerSession: Int
    var tanHash: String
    /// The teleTAN type of a teleTAN session's TAN; `nil` for a lab result's.
    var teleTANType: TeleTANType?
    var now: Date
    var validUntil: Date
}

/// A teleTAN to create within the global rate limit: at most `limit` created after `windowStart`.
struct TeleTANRequest: Sendable, Equatable {
    /// How the teleTAN is stored: its hash under the current pepper key.
    var digest: TeleTANDigest
    /// Every form the same teleTAN may be stored in (`TeleTANPepper.candidates`): a row with any of them is a
    /// collision, so one teleTAN never has two rows, whichever key hashed the other.
    var candidates: [TeleTANDigest]
    var type: TeleTANType
    var now: Date
    var validUntil: Date
    var limit: Int
    var windowStart: Date
    /// How long a creation may wait for its turn before it gives up (`.busy`).
    var lockTimeout: Duration
    /// The bearer token asking, spent by the creation: a token that created a teleTAN creates no other (`.replayed`).
    var bearer: SpentBearerToken? = nil
}

/// A bearer token as it is remembered: SHA-256 of its issuer and `jti`, until it expires.
struct SpentBearerToken: Sendable, Equatable {
    var hash: String
    var expiresAt: Date
}
