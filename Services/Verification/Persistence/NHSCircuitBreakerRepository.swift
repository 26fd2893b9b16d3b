// Circuit-breaker approvals (nhs §7): the officer's switch per kind, one row per approval request (the token's
// SHA-256, the answer, whether the rule held it; nothing of the request itself), and requests counted per minute for
// the spike rule (kept eight days).

import Foundation

/// The requests of one kind in the last hour and in the same hour of the 7 days before; the switch and quiet time.
struct NHSCircuitBreakerCounts: Sendable, Equatable {
    var lastHour: Int
    var sameHour: [Int]
    var mode: NHSApproval
    var quietUntil: Date?
}

/// A request is decided and stored in one step with respect to the kind's switch: a switch change or an officer's
/// resolution sees every request decided before it, and none decided after it is left behind. A kind without a
/// switch set is `yes`.
protocol NHSCircuitBreakerRepository: Sendable {
    /// Counts the request in its minute (so the last hour includes it), decides it by `rule` on the counts and the
    /// switch, and stores it under `tokenHash` until `expiresAt`.
    func request(
        kind: NHSCircuitBreakerKind,
        tokenHash: String,
        rule: NHSCircuitBreakerRule,
        now: Date,
        expiresAt: Date
    ) async throws -> (approval: NHSApproval, byRule: Bool, lastHour: Int)

    /// The counts as `request` sees them, without counting a request.
    func counts(kind: NHSCircuitBreakerKind, now: Date) async throws -> NHSCircuitBreakerCounts

    /// The approval of an unexpired token of `kind`.
    func approval(tokenHash: String, kind: NHSCircuitBreakerKind, now: Date) async throws -> NHSApproval?

    /// Sets the officer's switch of `kind`.
    func setMode(_ mode: NHSApproval, kind: NHSCircuitBreakerKind, now: Date) async throws

    /// Answers every pending, unexpired request of `kind` with `approval`; with `quietUntil` (a release) the rule is
    /// also quiet until then. Returns how many requests were answered.
    func resolvePending(
        kind: NHSCircuitBreakerKind,
        approval: NHSApproval,
        now: Date,
        quietUntil: Date?
    )
        async throws -> Int

    /// How many requests of `kind` are pending (and how many of them the rule held), and since when.
    func pending(kind: NHSCircuitBreakerKind, now: Date) async throws -> (pending: Int, byRule: Int, oldest: Date?)

    /// Deletes expired requests and counts older than eight days; returns how many requests.
    func deleteExpired(now: Date) async throws -> Int
}
