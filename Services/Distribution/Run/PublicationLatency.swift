// How long keys take from submission to the CDN: the latency of the keys a run publishes, and how long the oldest
// publishable key has waited.

import ENKeyStore

/// What one run measured. The key store keeps submission times by the hour (`submission_timestamp`, as cwa-server
/// does), so a key counts as submitted at the start of its submission hour: each latency is an upper bound, at most
/// an hour more than the real one.
struct PublicationLatency: Sendable, Equatable {
    /// Seconds from each newly published key's submission to the end of publishing (its archive and every index
    /// naming it written). `embargoed`: keys the expiry policy held back past their submission hour by design (a key
    /// submitted while it was still in use, or less than `EXPIRY_POLICY_MINUTES` after it expired).
    var immediate: [Double] = []
    var embargoed: [Double] = []
    /// Seconds since the oldest key the policies already allow to be published became publishable (the end of its
    /// first publishable hour), while no published file holds it; 0 when there is none. Such a key waits for the
    /// shifting threshold, or for a run that succeeds.
    var oldestWaiting: Double = 0

    /// The figures of a run that read `keys`, planned `plan` with `bundler`, and finished publishing at
    /// `publishedAt` (epoch seconds); `end` is the first hour the run did not publish.
    static func measure(
        keys: [DistributionKey],
        bundler: KeyBundler,
        plan: KeyTreeAssembler.Plan,
        end: Int64,
        publishedAt: Double
    ) -> PublicationLatency {
        var latency = PublicationLatency()
        // A key is publishable once its hour is over (with INCLUDE_INCOMPLETE_HOURS, once it has begun).
        let hourOffset: Int64 = bundler.policy.includeIncompleteHours ? 0 : 1
        var fresh = plan.building.subtracting(plan.onCDN)
        var oldest: Int64? = nil
        for key in keys {
            guard let hour = bundler.publishableHour(of: key) else { continue }
            // Each key data once: the first row of it that this run publishes.
            if fresh.remove(key.keyData) != nil {
                let seconds = max(0, publishedAt - Double(key.submissionHour) * 3600)
                if hour > key.submissionHour {
                    latency.embargoed.append(seconds)
                } else {
                    latency.immediate.append(seconds)
                }
            } else if hour < end, !plan.building.contains(key.keyData), !plan.onCDN.contains(key.keyData) {
                oldest = min(hour, oldest ?? hour)
            }
        }
        if let oldest {
            latency.oldestWaiting = max(0, publishedAt - Double(oldest + hourOffset) * 3600)
        }
        return latency
    }
}
