// verification-service's TAN check in memory, for route tests and runs without it.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation

/// Knows the TANs the test issued; each verifies once, as at verification-service, and remembers the attempt that
/// used it. `unavailable` makes every call fail like an unreachable peer.
actor InMemoryVerificationClient: VerificationClient {
    private struct Issued {
        /// `nil`: a lab result's TAN.
        var teleTANType: String?
        var spent = false
        var spentBy: UUID?
    }

    private struct IssuedNHS {
        var kit: NHSTestKit
        var spent = false
        var spentBy: UUID?
    }

    /// Issued TANs by hash.
    private var issued: [String: Issued] = [:]
    private var nhsTokens: [String: IssuedNHS] = [:]
    private var unavailable = false
    /// When set, the next spending call spends and then fails like a lost answer.
    private var loseNextAnswer = false
    /// When set, the next spending call spends and answers as a peer answers a repeated call whose first answer was
    /// lost, if it names the attempt instead of repeating the answer: spent by this attempt.
    private var repeatNext = false

    init() {}

    func issue(_ tan: String, teleTANType: String? = nil) {
        self.issued[SecretHash.sha256Hex(tan.lowercased())] = Issued(teleTANType: teleTANType)
    }

    /// An NHS submission token for a positive result of `kit`; it verifies once.
    func issueNHS(_ token: String, kit: NHSTestKit) {
        self.nhsTokens[SecretHash.sha256Hex(token.lowercased())] = IssuedNHS(kit: kit)
    }

    func setUnavailable(_ unavailable: Bool) {
        self.unavailable = unavailable
    }

    /// The next TAN or token that verifies is spent, but its answer is lost (the call throws).
    func loseNextAnswer(_ lose: Bool = true) {
        self.loseNextAnswer = lose
    }

    /// The next TAN or token that verifies is spent and answered `.spentBy` its own attempt.
    func answerNextAsRepeat() {
        self.repeatNext = true
    }

    func verify(_ tan: String, event: Bool, attempt: UUID) throws(UpstreamUnavailable) -> TANVerdict {
        guard !self.unavailable else { throw UpstreamUnavailable("verification-service is unavailable") }
        let hash = SecretHash.sha256Hex(tan)
        guard let entry = self.issued[hash] else { return .rejected }
        if entry.spent {
            return entry.spentBy == attempt ? .valid(teleTANType: entry.teleTANType) : .spentBy(entry.spentBy)
        }
        guard (entry.teleTANType?.uppercased() == "EVENT") == event else { return .wrongKind }
        self.issued[hash]?.spent = true
        self.issued[hash]?.spentBy = attempt
        try self.answerOrLose()
        if self.takeRepeat() { return .spentBy(attempt) }
        return .valid(teleTANType: entry.teleTANType)
    }

    func verifyNHSSubmissionToken(_ token: String, attempt: UUID) throws(UpstreamUnavailable) -> NHSTokenVerdict {
        guard !self.unavailable else { throw UpstreamUnavailable("verification-service is unavailable") }
        let hash = SecretHash.sha256Hex(token.lowercased())
        guard let entry = self.nhsTokens[hash] else { return .rejected }
        if entry.spent { return entry.spentBy == attempt ? .valid(entry.kit) : .spentBy(entry.spentBy) }
        self.nhsTokens[hash]?.spent = true
        self.nhsTokens[hash]?.spentBy = attempt
        try self.answerOrLose()
        if self.takeRepeat() { return .spentBy(attempt) }
        return .valid(entry.kit)
    }

    func tanRedemption(hash: String) throws(UpstreamUnavailable) -> CredentialRedemption? {
        guard !self.unavailable else { throw UpstreamUnavailable("verification-service is unavailable") }
        return self.issued[hash].map { CredentialRedemption(redeemed: $0.spent, redeemedBy: $0.spentBy) }
    }

    func nhsTokenRedemption(hash: String) throws(UpstreamUnavailable) -> CredentialRedemption? {
        guard !self.unavailable else { throw UpstreamUnavailable("verification-service is unavailable") }
        return self.nhsTokens[hash].map {
            CredentialRedemption(redeemed: $0.spent, redeemedBy: $0.spentBy, nhsTestKit: $0.kit)
        }
    }

    private func takeRepeat() -> Bool {
        defer { self.repeatNext = false }
        return self.repeatNext
    }

    private func answerOrLose() throws(UpstreamUnavailable) {
        guard self.loseNextAnswer else { return }
        self.loseNextAnswer = false
        throw UpstreamUnavailable("the answer was lost")
    }
}
