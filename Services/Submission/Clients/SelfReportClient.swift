// What submission-service asks data-donation-service about a self-report's one-time password (cwa-server §1.7).

import ENServiceKit
import Foundation

/// What data-donation-service said about a one-time password.
enum OTPVerdict: Equatable, Sendable {
    /// Valid, and now redeemed by this attempt (or by it before): it cannot authorise another submission.
    case valid
    /// Unknown or expired (a 2xx with another state, 400 or 404).
    case rejected
    /// Redeemed by another submission attempt (410; `nil`: one that named none).
    case spentBy(UUID?)
}

/// Redeems self-report one-time passwords through `POST {DATA_DONATION_INTERNAL_URL}/version/v1/srs`, naming the
/// submission attempt; asks afterwards which attempt redeemed one.
protocol SelfReportClient: Sendable {
    /// Verifies and so redeems `otp` (a lower-case UUID) for `attempt`; throws when data-donation-service cannot
    /// answer.
    func redeem(_ otp: String, attempt: UUID) async throws(UpstreamUnavailable) -> OTPVerdict

    /// Whether, and by which attempt, the self-report OTP with SHA-256 `hash` was redeemed; `nil` when unknown.
    func redemption(hash: String) async throws(UpstreamUnavailable) -> CredentialRedemption?
}
