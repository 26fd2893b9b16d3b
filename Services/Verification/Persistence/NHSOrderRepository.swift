// Orders and submission tokens of the NHS test path (nhs §3.2–§3.4): an order links the CTA token's hash to a
// polling token and to submission tokens; the keys of one order are submitted once.

import Foundation

/// An unexpired order as a poll or exchange finds it.
struct NHSOrder: Sendable, Equatable {
    var id: Int64
    var ctaHash: String
}

/// Whether an order's keys were submitted, and by which submission attempt (`nil`: one that named none).
struct NHSOrderRedemption: Sendable, Equatable {
    var order: NHSOrder
    var submitted: Bool
    var submittedBy: UUID?
}

/// How long an order and its submission tokens live (nhs §3.2).
enum NHSOrderLifetime {
    /// Four weeks: an order's lifetime until a result is read.
    static let untilRead: TimeInterval = 28 * 86_400
    /// After a poll or exchange read an available result, the order lives 4 more hours and its submission tokens
    /// 4 more days (the reference's `markForDeletion`).
    static let afterRead: TimeInterval = 4 * 3600
    static let submissionAfterRead: TimeInterval = 4 * 86_400
}

/// Every rule that must hold under concurrency is one step: an exchange counts (at most two) as it refreshes the
/// order, and an order's keys are marked submitted once. Tokens are kept as hashes only.
protocol NHSOrderRepository: Sendable {
    /// A new order with its first submission token, both living until `expiresAt`.
    func createOrder(
        ctaHash: String,
        pollingTokenHash: String,
        submissionTokenHash: String,
        now: Date,
        expiresAt: Date
    ) async throws

    /// The unexpired order of a polling token.
    func order(pollingTokenHash: String, now: Date) async throws -> NHSOrder?

    /// The unexpired order of a CTA token (one of its hashes).
    func order(ctaCandidates: [String], now: Date) async throws -> NHSOrder?

    /// After a poll found an available result: the order lives `afterRead` more, its submission tokens
    /// `submissionAfterRead` more when the result is positive.
    func markRead(orderID: Int64, positive: Bool, now: Date) async throws

    /// A CTA exchange of an available result: creates the order when the token came from the token API, counts the
    /// exchange (at most two per token, nhs §3.2 step 5), refreshes the lifetimes and stores a new submission token,
    /// as one step. `false` when the token was exchanged twice already or its order expired.
    func exchange(ctaHash: String, submissionTokenHash: String, positive: Bool, now: Date) async throws -> Bool

    /// The order of an unexpired submission token whose order has not submitted keys.
    func submittable(tokenHash: String, now: Date) async throws -> NHSOrder?

    /// The order a submission token belongs to, whether its keys were submitted and by which attempt, whatever its
    /// lifetimes; `nil` for a token no order has.
    func redemption(tokenHash: String) async throws -> NHSOrderRedemption?

    /// Marks the order's keys submitted by `submission`; `false` when a concurrent call did first or the
    /// submission tokens expired.
    func markSubmitted(orderID: Int64, now: Date, by submission: UUID?) async throws -> Bool

    /// Deletes orders (and their tokens) past both lifetimes and created `untilRead` ago or earlier; returns how many
    /// orders.
    ///
    /// An expired order is kept until test-result-service has deleted the result it links to: while it exists, its
    /// exchange count and submission mark refuse another exchange of the same CTA token, which would otherwise create
    /// a fresh order with a new submission token for a result whose keys were submitted already.
    func deleteExpired(now: Date) async throws -> Int
}
