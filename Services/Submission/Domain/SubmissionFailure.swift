// The refusals of a submission, and the status each one answers with (cwa-server §1.3).

import ENServiceKit
import HTTPTypes

/// A rule or a dependency said no. Messages name the rule, never a submitted value.
enum SubmissionFailure: Error, Equatable, APIErrorConvertible {
    /// Names a refusal the app handles apart (cwa-server §1.3): `KEYS_ALREADY_EXIST`.
    static let errorCodeHeader = HTTPField.Name("cwa-error-code")!

    case missingFakeHeader
    case unsupportedContentType
    case ambiguousAuthorization
    case missingAuthorization
    /// A `cwa-otp` on the on-behalf path, which takes a TAN only.
    case onBehalfNeedsTAN
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
    /// The database failed after the TAN (OTP, token) was used up: the rows are held, and a retry after `retryAfter`
    /// seconds, or the recovery, writes them.
    case storageFailedAfterVerification(retryAfter: Int)
    case fakeHeaderNotInteger
    /// A `cwa-otp` that is not a UUID (400, as in the reference's controller; a malformed TAN gets 403).
    case malformedOTP
    /// data-donation-service refused the self-report OTP: unknown, expired or redeemed.
    case otpRejected
    /// data-donation-service could not be reached or broke its contract: nothing stored, the OTP may be intact.
    case selfReportVerificationUnavailable
    /// Today's keys reached `MAX_KEYS_PER_DAY`; `retryAfter` seconds remain until midnight UTC.
    case selfReportDailyLimitReached(retryAfter: Int)
    /// A self-report holds keys that are stored already (under any type); its OTP was not redeemed.
    case keysAlreadyExist

    /// The reference answers its protobuf endpoints' refusals with an empty body (cwa-server §1.3), and so do we
    /// (Shared/README.md, "Errors"); the message is logged at debug level.
    var apiError: APIError {
        self.describedError.withoutBody()
    }

    private var describedError: APIError {
        switch self {
        case .missingFakeHeader: APIError(.badRequest, "the cwa-fake header is required (0 for a real submission)")
        case .unsupportedContentType: APIError(.unsupportedMediaType, "Content-Type must be application/x-protobuf")
        case .ambiguousAuthorization: APIError(.badRequest, "send cwa-authorization or cwa-otp, not both")
        case .missingAuthorization:
            APIError(.badRequest, "the cwa-authorization header (the TAN) or the cwa-otp header is required")
        case .onBehalfNeedsTAN:
            APIError(.badRequest, "a submission on behalf needs the cwa-authorization header (the TAN), not cwa-otp")
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
        case .storageFailedAfterVerification(let retryAfter):
            APIError(
                .serviceUnavailable,
                "storing failed after the TAN was used; the submission is kept and completed later",
                headers: [.retryAfter: "\(retryAfter)"]
            )
        case .fakeHeaderNotInteger:
            APIError(.badRequest, "the cwa-fake header must be an integer (0 for a real submission)")
        case .malformedOTP: APIError(.badRequest, "the cwa-otp header is not a UUID")
        case .otpRejected: APIError(.forbidden, "the one-time password is unknown, expired or redeemed")
        case .selfReportVerificationUnavailable:
            APIError(
                .serviceUnavailable,
                "OTP verification is unavailable; nothing was stored, try again later",
                headers: [.retryAfter: "30"]
            )
        case .selfReportDailyLimitReached(let retryAfter):
            APIError(
                .tooManyRequests,
                "today's self-report submissions are exhausted; try again after midnight UTC",
                headers: [.retryAfter: "\(retryAfter)"]
            )
        case .keysAlreadyExist:
            APIError(
                .badRequest,
                "the self-report holds keys that were submitted before; the OTP was not used",
                headers: [SubmissionFailure.errorCodeHeader: "KEYS_ALREADY_EXIST"]
            )
        }
    }
}
