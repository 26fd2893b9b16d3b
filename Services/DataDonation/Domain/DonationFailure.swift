// The refusals of data-donation-service: the reference's error codes and statuses (cwa-satellites §4.1–§4.4).

import ENAttestation
import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A refused request. The body is `{"errorCode": "<code>"}` as the reference's (`PpacErrorCode`); codes name the
/// broken rule, never a submitted value.
enum DonationFailure: Error, Equatable, Sendable {
    /// An Android attestation that failed one of §4.2's checks.
    case attestation(AttestationFailure)
    /// §4.2 step 1: a salt first seen longer ago than the attestation validity.
    case saltRedeemed
    /// §4.2 step 10: the Android ID's self-report quota (one per 90 days).
    case deviceQuotaExceeded
    /// §4.2 step 10: an Android ID that is missing or not 8 to 16 bytes.
    case androidIDInvalid
    /// §4.3 step 1.
    case deviceTokenSyntax
    /// §4.3 step 3: Apple did not accept the device token.
    case deviceTokenInvalid
    /// §4.3 step 4.
    case deviceTokenRedeemed
    /// §4.3 step 5.
    case deviceBlocked
    /// §4.3 step 2.
    case apiTokenExpired
    case apiTokenQuotaExceeded
    /// §4.3 step 6.
    case apiTokenAlreadyIssued
    /// Apple's DeviceCheck failed or could not be reached (the reference answers 500).
    case deviceCheckUnavailable
    /// §4.4: the payload's sets are out of bounds or hold unknown enum values.
    case metricsDataNotValid
    /// The body is not the endpoint's protobuf message, or the OTP is not a UUID.
    case invalidRequest
    /// An OTP that exists already.
    case otpAlreadyExists
    /// `cwa-fake` missing or not an integer on the self-report endpoints.
    case fakeHeaderMissing
    case unsupportedContentType
    /// The database is unavailable; nothing was stored.
    case storageUnavailable

    var code: String {
        switch self {
        case .attestation(let failure): failure.rawValue
        case .saltRedeemed: "SALT_REDEEMED"
        case .deviceQuotaExceeded: "DEVICE_QUOTA_EXCEEDED"
        case .androidIDInvalid: "ANDROID_ID_INVALID"
        case .deviceTokenSyntax: "DEVICE_TOKEN_SYNTAX_ERROR"
        case .deviceTokenInvalid: "DEVICE_TOKEN_INVALID"
        case .deviceTokenRedeemed: "DEVICE_TOKEN_REDEEMED"
        case .deviceBlocked: "DEVICE_BLOCKED"
        case .apiTokenExpired: "API_TOKEN_EXPIRED"
        case .apiTokenQuotaExceeded: "API_TOKEN_QUOTA_EXCEEDED"
        case .apiTokenAlreadyIssued: "API_TOKEN_ALREADY_ISSUED"
        case .deviceCheckUnavailable: "DEVICE_CHECK_UNAVAILABLE"
        case .metricsDataNotValid: "METRICS_DATA_NOT_VALID"
        case .invalidRequest: "INVALID_REQUEST"
        case .otpAlreadyExists: "OTP_ALREADY_EXISTS"
        case .fakeHeaderMissing: "FAKE_HEADER_MISSING"
        case .unsupportedContentType: "UNSUPPORTED_CONTENT_TYPE"
        case .storageUnavailable: "STORAGE_UNAVAILABLE"
        }
    }

    var status: HTTPResponse.Status {
        switch self {
        case .attestation(let failure): HTTPResponse.Status(code: failure.status)
        case .saltRedeemed, .deviceQuotaExceeded, .deviceTokenRedeemed, .apiTokenExpired, .apiTokenAlreadyIssued:
            .forbidden
        case .deviceBlocked: .unauthorized
        case .apiTokenQuotaExceeded: .tooManyRequests
        case .androidIDInvalid, .deviceTokenSyntax, .deviceTokenInvalid, .metricsDataNotValid, .invalidRequest,
            .otpAlreadyExists, .fakeHeaderMissing:
            .badRequest
        case .unsupportedContentType: .unsupportedMediaType
        case .deviceCheckUnavailable, .storageUnavailable: .serviceUnavailable
        }
    }

    /// The reason label of the refusal metrics.
    var reason: String { self.code.lowercased() }
}

extension DonationFailure: HTTPResponseError {
    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if self.status == .serviceUnavailable { headers[.retryAfter] = "30" }
        return Response(
            status: self.status,
            headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(["errorCode": self.code])))
        )
    }
}
