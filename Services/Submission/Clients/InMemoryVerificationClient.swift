// verification-service's TAN check in memory, for route tests and runs without it.

import ENServiceKit

/// Knows the TANs the test issued; each verifies once, as at verification-service. `unavailable` makes every call
/// fail like an unreachable peer.
actor InMemoryVerificationClient: VerificationClient {
    /// Issued TANs and the teleTAN type each derives from (`nil`: a lab result's TAN).
    private var issued: [String: String?] = [:]
    private var unavailable = false

    init() {}

    func issue(_ tan: String, teleTANType: String? = nil) {
        self.issued[tan.lowercased()] = .some(teleTANType)
    }

    func setUnavailable(_ unavailable: Bool) {
        self.unavailable = unavailable
    }

    private var nhsTokens: [String: NHSTestKit] = [:]

    /// An NHS submission token for a positive result of `kit`; it verifies once.
    func issueNHS(_ token: String, kit: NHSTestKit) {
        self.nhsTokens[token.lowercased()] = kit
    }

    func verifyNHSSubmissionToken(_ token: String) throws(UpstreamUnavailable) -> NHSTestKit? {
        guard !self.unavailable else { throw UpstreamUnavailable("verification-service is unavailable") }
        return self.nhsTokens.removeValue(forKey: token.lowercased())
    }

    func verify(_ tan: String, event: Bool) throws(UpstreamUnavailable) -> TANVerdict {
        guard !self.unavailable else { throw UpstreamUnavailable("verification-service is unavailable") }
        guard let type = self.issued[tan] else { return .rejected }
        guard (type?.uppercased() == "EVENT") == event else { return .wrongKind }
        self.issued[tan] = nil
        return .valid(teleTANType: type)
    }
}
