// What submission-service asks verification-service (cwa-server §1.7).

import ENServiceKit
import Foundation

/// What verification-service said about a TAN.
enum TANVerdict: Equatable, Sendable {
    /// Valid and now used; `teleTANType` is the `X-CWA-TELETAN-TYPE` of a teleTAN-derived TAN (`TEST`, `EVENT`).
    case valid(teleTANType: String?)
    /// Unknown, expired or used (404), or not a TAN verification-service would issue (400).
    case rejected
    /// Valid, but not of the kind asked for (409): verification-service left it usable.
    case wrongKind

    /// Whether the TAN came from an event teleTAN: only such TANs authorise a submission on behalf.
    var isEventTAN: Bool {
        if case .valid(let type?) = self { return type.caseInsensitiveCompare("EVENT") == .orderedSame }
        return false
    }
}

/// Verifies and uses up TANs through `POST {VERIFICATION_INTERNAL_URL}/version/v1/tan/verify`.
protocol VerificationClient: Sendable {
    /// Verifies and so uses up `tan` when it is of the kind asked for (`event`: an EVENT teleTAN's, or not); throws
    /// when verification-service cannot answer.
    func verify(_ tan: String, event: Bool) async throws(UpstreamUnavailable) -> TANVerdict

    /// Verifies and so uses up an NHS diagnosis key submission token (its order's keys are then submitted); the
    /// test kit of its positive result, or `nil` when the token is unknown, expired, used or not for a positive result.
    func verifyNHSSubmissionToken(_ token: String) async throws(UpstreamUnavailable) -> NHSTestKit?
}
