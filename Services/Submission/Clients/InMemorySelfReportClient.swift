// data-donation-service's OTP redemption in memory, for route tests and runs without it.

import ENCrypto
import ENServiceKit
import Foundation

/// Knows the OTPs the test issued; each redeems once, as at data-donation-service, and remembers the attempt that
/// redeemed it. `unavailable` makes every call fail like an unreachable peer.
actor InMemorySelfReportClient: SelfReportClient {
    /// Issued OTPs by hash, with the attempt that redeemed each (`.some(nil)`: unredeemed).
    private var issued: [String: UUID?] = [:]
    private var unavailable = false
    /// Every OTP a caller tried to redeem, valid or not, in order.
    private(set) var calls: [String] = []

    init() {}

    func issue(_ otp: String) {
        self.issued[SecretHash.sha256Hex(otp.lowercased())] = .some(nil)
    }

    func setUnavailable(_ unavailable: Bool) {
        self.unavailable = unavailable
    }

    /// Whether `otp` was issued and is still unredeemed.
    func isRedeemable(_ otp: String) -> Bool {
        self.issued[SecretHash.sha256Hex(otp.lowercased())] == .some(nil)
    }

    func redeem(_ otp: String, attempt: UUID) throws(UpstreamUnavailable) -> OTPVerdict {
        self.calls.append(otp)
        guard !self.unavailable else { throw UpstreamUnavailable("data-donation-service is unavailable") }
        let hash = SecretHash.sha256Hex(otp.lowercased())
        guard let entry = self.issued[hash] else { return .rejected }
        if let by = entry { return by == attempt ? .valid : .spentBy(by) }
        self.issued[hash] = .some(attempt)
        return .valid
    }

    func redemption(hash: String) throws(UpstreamUnavailable) -> CredentialRedemption? {
        guard !self.unavailable else { throw UpstreamUnavailable("data-donation-service is unavailable") }
        return self.issued[hash].map { CredentialRedemption(redeemed: $0 != nil, redeemedBy: $0 ?? nil) }
    }
}
