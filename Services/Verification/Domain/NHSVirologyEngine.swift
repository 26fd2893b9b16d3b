// The NHS test path's rules (nhs §3.2–§3.4): an order and its three tokens, what a poll and a CTA exchange may show
// an app, and when a diagnosis key submission token may submit. The controller reads bodies and writes answers.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation

/// Orders, polls, CTA exchanges and submission tokens over the order store and test-result-service's NHS results.
/// test-result-service out of reach surfaces as `UpstreamUnavailable`.
struct NHSVirologyEngine: Sendable {
    let store: any NHSOrderRepository
    let testResults: any TestResultClient
    let pepper: KeyRing
    let clock: WallClock
    /// Draws a new CTA token (tests draw known ones, to collide).
    var newCTAToken: @Sendable () -> CTAToken = { CTAToken.random() }

    /// A new order's tokens, each given out once.
    struct Order: Sendable, Equatable {
        var cta: CTAToken
        var pollingToken: String
        var submissionToken: String
    }

    /// A result the asking app may see, with the V2 flags for it.
    struct Shown: Sendable {
        var date: NHSTestEndDate
        var result: NHSTestResult
        var kit: NHSTestKit
        var policy: NHSVirologyPolicy
    }

    /// What a poll of a polling token finds.
    enum Poll: Sendable {
        /// No unexpired order has the token, or test-result-service knows no result for it.
        case unknown
        case pending
        /// The result exists but this app must not see it (§3.4).
        case hidden
        case available(Shown)
    }

    /// What a CTA exchange finds.
    enum Exchange: Sendable {
        case unknown
        case pending
        case hidden
        /// The token was exchanged twice already, or its order expired.
        case exhausted
        /// The result, and the new submission token the exchange stored.
        case exchanged(Shown, submissionToken: String)
    }

    /// What submission-service's check of a diagnosis key submission token finds.
    enum SubmissionCheck: Sendable, Equatable {
        /// The token may submit, and this attempt now has (one success per order).
        case valid(NHSTestKit)
        /// The same attempt submitted already: it repeats a call whose answer it lost.
        case repeated(NHSTestKit)
        /// Another attempt submitted the order's keys (`by`, when it named itself).
        case redeemedElsewhere(by: UUID?)
        /// No unexpired order with a positive result whose keys are unsubmitted has the token.
        case rejected
    }

    // MARK: - Orders

    /// A new order with new tokens; three drawn CTA tokens that exist already throw `NHSCollision`.
    func order() async throws -> Order {
        let now = self.clock.now
        for _ in 0..<3 {
            let cta = self.newCTAToken()
            let hashes = self.pepper.pepperedCandidates(cta.value)
            guard try await self.testResults.nhsCreateOrder(ctaHashes: hashes) else { continue }
            let order = Order(
                cta: cta,
                pollingToken: UUID().uuidString.lowercased(),
                submissionToken: UUID().uuidString.lowercased()
            )
            try await self.store.createOrder(
                ctaHash: hashes[0],
                pollingTokenHash: SecretHash.sha256Hex(order.pollingToken),
                submissionTokenHash: SecretHash.sha256Hex(order.submissionToken),
                now: now,
                expiresAt: now.addingTimeInterval(NHSOrderLifetime.untilRead)
            )
            return order
        }
        throw NHSCollision()
    }

    /// A poll of `pollingToken` by the app `agent` (`v2` with its `country`); an available result the app sees
    /// extends the order's lifetimes.
    func poll(pollingToken: String, v2: Bool, country: String?, agent: NHSUserAgent) async throws -> Poll {
        let now = self.clock.now
        guard
            let order = try await self.store.order(
                pollingTokenHash: SecretHash.sha256Hex(pollingToken.lowercased()),
                now: now
            ),
            let reported = try await self.testResults.nhsResult(ctaHashes: [order.ctaHash])
        else { return .unknown }
        guard let (date, result, kit) = reported.available else { return .pending }
        guard let policy = Self.policy(v2: v2, country: country, result: result, kit: kit, agent: agent) else {
            return .hidden
        }
        try await self.store.markRead(orderID: order.id, positive: result == .positive, now: now)
        return .available(Shown(date: date, result: result, kit: kit, policy: policy))
    }

    /// An exchange of `cta` by the app `agent`: counts against the token's two exchanges and stores a new
    /// submission token, for an available result the app sees.
    func exchange(_ cta: CTAToken, v2: Bool, country: String?, agent: NHSUserAgent) async throws -> Exchange {
        let now = self.clock.now
        let candidates = self.pepper.pepperedCandidates(cta.value)
        // A token from the token API has no order yet: test-result-service is asked with every candidate hash.
        let order = try await self.store.order(ctaCandidates: candidates, now: now)
        guard let reported = try await self.testResults.nhsResult(ctaHashes: order.map { [$0.ctaHash] } ?? candidates)
        else { return .unknown }
        guard let (date, result, kit) = reported.available else { return .pending }
        guard let policy = Self.policy(v2: v2, country: country, result: result, kit: kit, agent: agent) else {
            return .hidden
        }
        let submission = UUID().uuidString.lowercased()
        guard
            try await self.store.exchange(
                ctaHash: reported.ctaHash,
                submissionTokenHash: SecretHash.sha256Hex(submission),
                positive: result == .positive,
                now: now
            )
        else { return .exhausted }
        return .exchanged(Shown(date: date, result: result, kit: kit, policy: policy), submissionToken: submission)
    }

    // MARK: - Submission tokens

    /// Whether `token` may submit keys for the attempt `attempt`, marking the order's keys submitted by it when so.
    func checkSubmissionToken(_ token: String, attempt: UUID?) async throws -> SubmissionCheck {
        let now = self.clock.now
        let tokenHash = SecretHash.sha256Hex(token.lowercased())
        if let known = try await self.store.redemption(tokenHash: tokenHash), known.submitted {
            return try await self.submitted(known, attempt: attempt)
        }
        guard
            let order = try await self.store.submittable(tokenHash: tokenHash, now: now),
            let kit = try await self.positiveKit(order)
        else { return .rejected }
        guard try await self.store.markSubmitted(orderID: order.id, now: now, by: attempt) else {
            // A concurrent call submitted the order's keys first.
            guard let known = try await self.store.redemption(tokenHash: tokenHash), known.submitted else {
                return .rejected
            }
            return try await self.submitted(known, attempt: attempt)
        }
        return .valid(kit)
    }

    /// The order of a submission token's hash, whether (and by which attempt) its keys were submitted, and the kit of
    /// its positive result; `nil` for a hash no order's token has.
    func redemption(tokenHash: String) async throws -> (redemption: NHSOrderRedemption, kit: NHSTestKit?)? {
        guard let known = try await self.store.redemption(tokenHash: tokenHash) else { return nil }
        return (known, try await self.positiveKit(known.order))
    }

    /// For an order whose keys were submitted: the kit again to the attempt that did; to a caller that names no
    /// attempt the answer of an unusable token, as before attempts existed.
    private func submitted(_ known: NHSOrderRedemption, attempt: UUID?) async throws -> SubmissionCheck {
        if let attempt, known.submittedBy == attempt, let kit = try await self.positiveKit(known.order) {
            return .repeated(kit)
        }
        return attempt == nil ? .rejected : .redeemedElsewhere(by: known.submittedBy)
    }

    /// The test kit of the order's result when it is positive.
    private func positiveKit(_ order: NHSOrder) async throws -> NHSTestKit? {
        guard let reported = try await self.testResults.nhsResult(ctaHashes: [order.ctaHash]),
            let (_, result, kit) = reported.available, result == .positive
        else { return nil }
        return kit
    }

    /// The policy of §3.4 for the asking app, or `nil` when the result is hidden from it (V1: self-reported rapid
    /// tests; V2: apps up to 4.3 when a confirmatory test is required).
    private static func policy(
        v2: Bool,
        country: String?,
        result: NHSTestResult,
        kit: NHSTestKit,
        agent: NHSUserAgent
    ) -> NHSVirologyPolicy? {
        let policy = NHSVirologyPolicy(country: country, result: result, kit: kit)
        let hidden = v2 ? policy.hidesV2(from: agent) : NHSVirologyPolicy.hidesV1(kit)
        return hidden ? nil : policy
    }
}

/// Three order attempts drew tokens that exist already.
struct NHSCollision: Error {}
