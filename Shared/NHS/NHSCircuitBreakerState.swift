// One kind of NHS circuit breaker as verification-service reports it to the portal (nhs §7).

/// The officer's switch and the counts of one kind (`exposure-notification`, `venue`): never a request or a token.
package struct NHSCircuitBreakerState: Sendable, Codable, Equatable {
    package var kind: String
    /// The officer's switch: `yes` (the spike rule decides), `no` or `pending` (every new request).
    package var mode: String
    package var pending: Int
    package var pendingByRule: Int
    /// ISO-8601 instants.
    package var oldestPending: String?
    package var lastHour: Int
    /// The median of the same hour on the 7 days before, and the count above which the rule holds requests.
    package var sameHourMedian: Int
    package var threshold: Int
    /// Until when an officer's release quiets the rule.
    package var ruleQuietUntil: String?

    package init(
        kind: String,
        mode: String,
        pending: Int,
        pendingByRule: Int,
        oldestPending: String? = nil,
        lastHour: Int,
        sameHourMedian: Int,
        threshold: Int,
        ruleQuietUntil: String? = nil
    ) {
        self.kind = kind
        self.mode = mode
        self.pending = pending
        self.pendingByRule = pendingByRule
        self.oldestPending = oldestPending
        self.lastHour = lastHour
        self.sameHourMedian = sameHourMedian
        self.threshold = threshold
        self.ruleQuietUntil = ruleQuietUntil
    }
}
