// The refusals of a submission, and the status each one answers with (cwa-server §1.3).

import ENServiceKit
import HTTPTypes

/// A rule or a dependency said no. Messages name the rule, never a submitted value.
enum SubmissionFailure: Error, Equatable, APIErrorConvertible {
    case missingFakeHeader
    case unsupportedContentType
    case selfReportUnsupported
    case ambiguousAuthorization
    case missingAuthorization
    case unreadablePayload
    case invalidPayload(RuleViolation)
    case malformedTAN
    case tanRejected
    /// The TAN of an event teleTAN on the key path.
    case eventTANNotAllowed
    /// A TAN that is not an event teleTAN's on the on-behalf path.
    case eventTANRequired
    case verificationUnavailable
    /// The database failed before the TAN was checked: the TAN is intact, a retry can succeed.
    case storageUnavailable
    /// The database failed after the TAN was used up: no Retry-After, a retry with this TAN gets 403.
    case storageFailedAfterVerification
    case fakeHeaderNotInteger

    /// The reference answers its protobuf endpoints' refusals with an empty body (cwa-server §1.3), and so do we
    /// (Shared/README.md, "Errors"); the message is logged at debug level.
    var apiError: APIError {
        self.describedError.withoutBody()
    }

    private var describedError: APIError {
        switch self {
        case .missingFakeHeader: APIError(.badRequest, "the cwa-fake header is required (0 for a real submission)")
        case .unsupportedContentType: APIError(.unsupportedMediaType, "Content-Type must be application/x-protobuf")
        case .selfReportUnsupported: APIError(.badRequest, "self-report submissions (cwa-otp) are not supported")
        case .ambiguousAuthorization: APIError(.badRequest, "send cwa-authorization or cwa-otp, not both")
        case .missingAuthorization: APIError(.badRequest, "the cwa-authorization header (the TAN) is required")
        case .unreadablePayload: APIError(.badRequest, "the body is not a SubmissionPayload protobuf message")
        case .invalidPayload(let violation): APIError(.badRequest, violation.message)
        case .malformedTAN: APIError(.forbidden, "the TAN is not a UUID")
        case .tanRejected: APIError(.forbidden, "the TAN is unknown, expired or used")
        case .eventTANNotAllowed: APIError(.forbidden, "the TAN of an event teleTAN cannot submit keys")
        case .eventTANRequired: APIError(.forbidden, "a submission on behalf needs the TAN of an event teleTAN")
        case .verificationUnavailable:
            APIError(
                .serviceUnavailable,
                "TAN verification is unavailable; nothing was stored, try again later",
                headers: [.retryAfter: "30"]
            )
        case .storageUnavailable:
            APIError(
                .serviceUnavailable,
                "storage is unavailable; nothing was stored, try again later",
                headers: [.retryAfter: "30"]
            )
        case .storageFailedAfterVerification:
            APIError(.serviceUnavailable, "storing failed after the TAN was used; nothing was stored")
        case .fakeHeaderNotInteger:
            APIError(.badRequest, "the cwa-fake header must be an integer (0 for a real submission)")
        }
    }
}
