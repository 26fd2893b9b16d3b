// data-donation-service's OTP redemption in memory, for route tests and runs without it.

import ENServiceKit

/// Knows the OTPs the test issued; each redeems once, as at data-donation-service. `unavailable` makes every call
/// fail like an unreachable peer.
actor InMemorySelfReportClient: SelfReportClient {
    private var issued: Set<String> = []
    private var unavailable = false
    /// Every OTP a caller tried to redeem, valid or not, in order.
    private(set) var calls: [String] = []

    init() {}

    func issue(_ otp: String) {
        self.issued.insert(otp.lowercased())
    }

    func setUnavailable(_ unavailable: Bool) {
        self.unavailable = unavailable
    }

    /// Whether `otp` was issued and is still unredeemed.
    func isRedeemable(_ otp: String) -> Bool {
        self.issued.contains(otp.lowercased())
    }

    func redeem(_ otp: String) throws(UpstreamUnavailable) -> OTPVerdict {
        self.calls.append(otp)
        guard !self.unavailable else { throw UpstreamUnavailable("data-donation-service is unavailable") }
        return self.issued.remove(otp) == nil ? .rejected : .valid
    }
}
