// The refusals of the verification rules, and the status each one answers with (cwa-satellites §1.2).

import ENServiceKit
import Foundation
import HTTPTypes

/// A rule said no. Messages name the rule, never a submitted value.
enum VerificationFailure: Error, Equatable, APIErrorConvertible {
    case invalidRequest(String)
    /// The GUID or DOB hash was used for a registration already.
    case keyAlreadyRegistered
    /// The teleTAN does not exist, has expired or was redeemed.
    case teleTANNotRedeemable
    /// No session has this registration token (app-facing endpoints: 400).
    case unknownToken
    /// No session has this registration token (internal result endpoint: 404).
    case unknownSession
    case tanQuotaUsed
    case resultNotPositive
    case dobMismatch
    /// The lab protected the result with the date of birth, and the session has no DOB hash.
    case dobRequired
    /// The internal result endpoint serves only GUID sessions.
    case teleTANSession
    case tanNotRedeemable
    /// Valid and unused, but not of the kind the caller asked for (it stays usable).
    case tanOfOtherKind
    /// Spent before by another submission attempt (`nil`: one that named none); the answer names it in
    /// `X-Redeemed-By`, so the caller can complete that attempt's keys.
    case tanRedeemed(by: UUID?)
    case unauthorized(String)
    case rateLimited
    /// The day's registrations reached `REGISTRATIONS_PER_DAY`; `retryAfter` seconds until midnight UTC.
    case registrationsCapped(retryAfter: Int)
    /// teleTAN creations are queued longer than the lock timeout.
    case busy
    case testResultsUnavailable

    var apiError: APIError {
        switch self {
        case .invalidRequest(let message): APIError(.badRequest, message)
        case .keyAlreadyRegistered: APIError(.badRequest, "this key has been used for a registration already")
        case .teleTANNotRedeemable: APIError(.badRequest, "the teleTAN is unknown, expired or used")
        case .unknownToken: APIError(.badRequest, "unknown registration token")
        case .unknownSession: APIError(.notFound, "unknown registration token")
        case .tanQuotaUsed: APIError(.badRequest, "this registration token has obtained its TANs already")
        case .resultNotPositive: APIError(.badRequest, "a TAN requires a positive test result")
        case .dobMismatch: APIError(.forbidden, "the date-of-birth check failed")
        case .dobRequired:
            APIError(.forbidden, "this test result is protected: register with the date of birth (keyDob)")
        case .teleTANSession: APIError(.forbidden, "the registration token belongs to a teleTAN")
        case .tanNotRedeemable: APIError(.notFound, "the TAN is unknown, expired or used")
        case .tanOfOtherKind: APIError(.conflict, "the TAN is not of the kind asked for; it stays usable")
        case .tanRedeemed(let by):
            APIError(
                .gone,
                "the TAN was used by another submission",
                headers: by.map { [Redemption.redeemedByHeader: $0.uuidString.lowercased()] } ?? [:]
            )
        case .unauthorized(let message): APIError(.unauthorized, message)
        case .rateLimited: APIError(.tooManyRequests, "the teleTAN rate limit is reached; try again later")
        case .registrationsCapped(let retryAfter):
            APIError(
                .tooManyRequests,
                "the day's registrations are used up; try again after midnight UTC",
                headers: [.retryAfter: "\(retryAfter)"]
            )
        case .busy: APIError(.serviceUnavailable, "teleTAN creation is busy; try again", headers: [.retryAfter: "5"])
        case .testResultsUnavailable:
            APIError(.serviceUnavailable, "test results are unavailable; try again later", headers: [.retryAfter: "30"])
        }
    }
}
