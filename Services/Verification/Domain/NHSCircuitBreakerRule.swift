// The decision for a new circuit-breaker request (nhs §7): the officer's switch, then the spike rule.

/// The decision for a new request, from the officer's switch and the spike rule.
struct NHSCircuitBreakerRule: Sendable, Equatable {
    var multiple: Int
    var minimum: Int

    /// The median of the 7 earlier days' counts (the lower middle of an even count never arises: there are 7).
    static func median(_ counts: [Int]) -> Int {
        guard !counts.isEmpty else { return 0 }
        return counts.sorted()[counts.count / 2]
    }

    /// The count of the last hour above which the rule holds requests.
    func threshold(sameHour: [Int]) -> Int {
        max(self.multiple * Self.median(sameHour), self.minimum)
    }

    /// What a new request is answered, and whether the rule (not the switch) held it.
    func decide(mode: NHSApproval, lastHour: Int, sameHour: [Int], quiet: Bool) -> (NHSApproval, byRule: Bool) {
        switch mode {
        case .no: return (.no, false)
        case .pending: return (.pending, false)
        case .yes:
            if !quiet && lastHour > self.threshold(sameHour: sameHour) { return (.pending, true) }
            return (.yes, false)
        }
    }
}
