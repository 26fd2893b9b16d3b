// The flows of the NHS test path at test-result-service (nhs §3.2, §3.5, §3.6, §3.7): a lab's result for an ordered
// token, a result under a new token (one or in bulk), verification-service's orders and lookups. Tokens are kept only as
// their hashes under the CTA pepper.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation

struct NHSLabEngine: Sendable {
    let results: any NHSResultRepository
    /// `NHS_CTA_PEPPER_FILE`: a token is stored under the current key's hash and found under any key's.
    let pepper: KeyRing
    let clock: WallClock
    /// Draws a new CTA token (tests draw known ones, to collide).
    var newCTAToken: @Sendable () -> CTAToken = { CTAToken.random() }

    /// How often a new token is drawn again when the drawn one exists already.
    static let draws = 3

    /// A lab's result for the token of an order: stored when the order is pending and unexpired.
    func upload(_ token: CTAToken, result: NHSLabResult) async throws -> NHSUploadOutcome {
        try await self.results.upload(
            candidates: self.pepper.pepperedCandidates(token.value),
            result: result,
            now: self.clock.now
        )
    }

    /// The token API: `result` stored under a new token, which the notification service sends to the citizen.
    func issueToken(for result: NHSLabResult) async throws -> CTAToken {
        let now = self.clock.now
        for _ in 0..<Self.draws {
            let token = self.newCTAToken()
            if try await self.results.createAvailable(
                ctaHash: self.pepper.peppered(token.value),
                otherHashes: self.otherHashes(of: token),
                result: result,
                now: now,
                expiresAt: now.addingTimeInterval(NHSLifetime.token)
            ) {
                return token
            }
        }
        throw NHSCollision()
    }

    /// `count` new tokens with `result` stored under each, all in one transaction or none (nhs §3.7).
    func issueTokens(count: Int, for result: NHSLabResult) async throws -> [CTAToken] {
        for _ in 0..<Self.draws {
            let tokens = Array(Set((0..<count).map { _ in self.newCTAToken() }))
            guard tokens.count == count else { continue }
            let now = self.clock.now
            do {
                try await self.results.createAvailable(
                    tokens.map { (self.pepper.peppered($0.value), result) },
                    otherHashes: tokens.flatMap(self.otherHashes(of:)),
                    now: now,
                    expiresAt: now.addingTimeInterval(NHSLifetime.token)
                )
                return tokens
            } catch is NHSCollision {
                continue
            }
        }
        throw NHSCollision()
    }

    /// verification-service's order: a pending result under `hashes[0]` (the new token's hash under the current key);
    /// `false` when it or one of the other keys' hashes exists (verification draws another token).
    func order(hashes: [String]) async throws -> Bool {
        let now = self.clock.now
        return try await self.results.createOrder(
            ctaHash: hashes[0],
            otherHashes: Array(hashes.dropFirst()),
            now: now,
            expiresAt: now.addingTimeInterval(NHSLifetime.token)
        )
    }

    /// The unexpired result stored under one of `hashes`.
    func result(hashes: [String]) async throws -> NHSStoredResult? {
        try await self.results.find(candidates: hashes, now: self.clock.now)
    }

    private func otherHashes(of token: CTAToken) -> [String] {
        Array(self.pepper.pepperedCandidates(token.value).dropFirst())
    }
}
