// What submission-service asks data-donation-service about a self-report's one-time password (cwa-server §1.7).

import ENServiceKit

/// What data-donation-service said about a one-time password.
enum OTPVerdict: Equatable, Sendable {
    /// Valid, and now redeemed: it cannot authorise another submission.
    case valid
    /// Unknown, expired or redeemed before (a 2xx with another state, 400 or 404).
    case rejected
}

/// Redeems self-report one-time passwords through `POST {DATA_DONATION_INTERNAL_URL}/version/v1/srs`.
protocol SelfReportClient: Sendable {
    /// Verifies and so redeems `otp` (a lower-case UUID); throws when data-donation-service cannot answer.
    func redeem(_ otp: String) async throws(UpstreamUnavailable) -> OTPVerdict
}
