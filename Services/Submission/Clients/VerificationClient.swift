// What submission-service asks verification-service (cwa-server §1.7).

import ENNHS
import ENServiceKit
import Foundation

/// What verification-service said about a TAN.
enum TANVerdict: Equatable, Sendable {
    /// Valid and now used, by this attempt (or used by it before); `teleTANType` is the `X-CWA-TELETAN-TYPE` of a
    /// teleTAN-derived TAN (`TEST`, `EVENT`).
    case valid(teleTANType: String?)
    /// Unknown or expired (404), or not a TAN verification-service would issue (400).
    case rejected
    /// Valid, but not of the kind asked for (409): verification-service left it usable.
    case wrongKind
    /// Used by another submission attempt (410; `nil`: one that named none).
    case spentBy(UUID?)

    /// Whether the TAN came from an event teleTAN: only such TANs authorise a submission on behalf.
    var isEventTAN: Bool {
        if case .valid(let type?) = self { return type.caseInsensitiveCompare("EVENT") == .orderedSame }
        return false
    }
}

/// What verification-service said about an NHS diagnosis key submission token.
enum NHSTokenVerdict: Equatable, Sendable {
    /// Valid and now used by this attempt (or by it before); the test kit of its positive result.
    case valid(NHSTestKit)
    /// Unknown, expired, or not for a positive result.
    case rejected
    /// Its order's keys were submitted by another attempt (`nil`: one that named none).
    case spentBy(UUID?)
}

/// What a credential's spender tells of it afterwards, by its SHA-256: whether and by which attempt it was spent.
struct CredentialRedemption: Equatable, Sendable {
    var redeemed: Bool
    var redeemedBy: UUID?
    /// For an NHS submission token: the test kit of its order's positive result.
    var nhsTestKit: NHSTestKit? = nil
}

/// Verifies and uses up TANs through `POST {VERIFICATION_INTERNAL_URL}/version/v1/tan/verify` (and NHS submission
/// tokens), naming the submission attempt; asks afterwards which attempt spent one.
protocol VerificationClient: Sendable {
    /// Verifies and so uses up `tan` for `attempt` when it is of the kind asked for (`event`: an EVENT teleTAN's, or
    /// not); throws when verification-service cannot answer.
    func verify(_ tan: String, event: Bool, attempt: UUID) async throws(UpstreamUnavailable) -> TANVerdict

    /// Verifies and so uses up an NHS diagnosis key submission token for `attempt` (its order's keys are then
    /// submitted).
    func verifyNHSSubmissionToken(
        _ token: String,
        attempt: UUID
    ) async throws(UpstreamUnavailable) -> NHSTokenVerdict

    /// Whether, and by which attempt, the TAN with SHA-256 `hash` was used; `nil` when verification-service knows no
    /// TAN with it.
    func tanRedemption(hash: String) async throws(UpstreamUnavailable) -> CredentialRedemption?

    /// The same for an NHS submission token, with its order's test kit.
    func nhsTokenRedemption(hash: String) async throws(UpstreamUnavailable) -> CredentialRedemption?
}
