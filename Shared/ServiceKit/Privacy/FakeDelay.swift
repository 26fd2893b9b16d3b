// How long a dummy request waits, so that its timing matches real requests of the same endpoint.

import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// How long one endpoint's fake requests wait: a draw from the distribution of its recent real requests' durations
/// (cwa-server §1.11, cwa-satellites §1.5, beyond the reference).
///
/// The reference waits a Poisson-distributed number of milliseconds around a moving average of real durations. That
/// matches the mean but not the shape: real durations cluster tightly, the Poisson spread does not, and a two-sample
/// Kolmogorov–Smirnov test (`cwa privacy-check`) tells such dummies from real submissions. So the last `recentCount`
/// real durations are kept, and once `replayThreshold` of them exist a dummy's delay is a smoothed bootstrap draw from
/// them (`smoothedDraw`): its delay then has the distribution of real durations without repeating any of them, and it
/// follows a change of load as fast as the window turns over. Until then, and for the `average` the metrics show, the
/// reference's moving average and Poisson delay remain. Dummies sleep on SwiftNIO's event-loop timers
/// (`eventLoopSleep`), and `wait` subtracts how late recent sleeps woke up: `Task.sleep` wakes about 0.5 ms late at
/// every percentile, enough for the test to tell dummies from real requests. The last `awake` of a dummy's wait is
/// spent awake, so that its answer leaves the machine as fast as a real one's.
///
/// Nothing takes a lock. The average is one atomic integer of microseconds that a recording moves by
/// `(sample − average) / samples` with a compare-and-exchange, retried when another recording came first: a plain
/// load-then-add would let concurrent recordings each add the same gap and push the average past every recorded
/// duration. The recent durations are a ring of atomic slots that a recording claims by an atomic increment. No
/// request ever waits for a lock on this hot path.
package final class FakeDelay: Sendable {
    private let microseconds: Atomic<Int>
    private let samples: Int
    /// Real durations in microseconds, `-1` where none was written yet.
    private let recent: [Slot]
    /// Recordings so far; the next one writes slot `recorded % recentCount`.
    private let recorded = Atomic<Int>(0)
    /// How much later than asked a dummy's sleep ends (timer slack, scheduling), in microseconds: a moving average
    /// that `wait` subtracts, so a dummy takes its delay and not its delay plus the wake-up.
    private let lateness = Atomic<Int>(0)
    /// How many real durations are kept: few, so that dummies follow the current speed of real requests closely. A
    /// longer window replays durations from further back, and whenever the machine gets faster or slower (load,
    /// checkpoints, other tenants) dummies then lag behind real requests, which a two-sample test notices.
    package static let recentCount = 16
    /// How many must exist before dummies replay them.
    package static let replayThreshold = 8

    private final class Slot: Sendable {
        let microseconds = Atomic<Int>(-1)
    }
    /// The longest delay a fake request waits, and the longest real duration folded into the average.
    package static let maximum: Duration = .seconds(10)

    /// - Parameters:
    ///   - initial: the estimate before any real request was measured (the reference: 10 ms).
    ///   - samples: weight of the past in the moving average (the reference: 10 for submission, 5 for verification).
    package init(initial: Duration = .milliseconds(10), samples: Int) {
        self.microseconds = Atomic(Self.microseconds(initial))
        self.samples = max(1, samples)
        self.recent = (0..<Self.recentCount).map { _ in Slot() }
    }

    /// An estimate configured by `settings`.
    package convenience init(_ settings: Settings) {
        self.init(initial: settings.initial, samples: settings.samples)
    }

    /// `FAKE_DELAY_INITIAL` and `FAKE_DELAY_SAMPLES`, the same two settings in every service with dummy requests.
    package struct Settings: Sendable, Equatable {
        package var initial: Duration
        package var samples: Int

        package init(settings: SettingsReader, defaultSamples: Int) {
            self.initial = settings.duration(
                "FAKE_DELAY_INITIAL",
                default: .milliseconds(10),
                help: "Assumed duration of real requests until some were measured."
            )
            self.samples = settings.int(
                "FAKE_DELAY_SAMPLES",
                default: defaultSamples,
                range: 1...1000,
                help: "Weight of the past in the moving average of real durations."
            )
        }
    }

    /// Keeps the duration of a completed real request, and folds it into the average.
    package func record(_ duration: Duration) {
        let sample = Self.microseconds(min(duration, Self.maximum))
        Self.step(self.microseconds, towards: sample, weight: self.samples)
        let slot = self.recorded.wrappingAdd(1, ordering: .relaxed).oldValue
        self.recent[slot % Self.recentCount].microseconds.store(sample, ordering: .relaxed)
    }

    /// The current estimate.
    package var average: Duration {
        .microseconds(self.microseconds.load(ordering: .relaxed))
    }

    /// A draw from the distribution of the recent real durations; before `replayThreshold` of them were recorded, a
    /// Poisson-distributed number of milliseconds with the average as mean. Capped at `maximum`.
    package func delay(using generator: inout some RandomNumberGenerator) -> Duration {
        let available = min(self.recorded.load(ordering: .relaxed), Self.recentCount)
        if available >= Self.replayThreshold {
            // A slot claimed by a recording that has not stored yet still holds -1: it is left out.
            let durations = self.recent.prefix(available).map { $0.microseconds.load(ordering: .relaxed) }.filter {
                $0 >= 0
            }
            if let drawn = Self.smoothedDraw(from: durations, using: &generator) {
                return min(.microseconds(drawn), Self.maximum)
            }
        }
        let mean = Double(self.microseconds.load(ordering: .relaxed)) / 1000
        return min(.milliseconds(Self.poisson(mean: mean, using: &generator)), Self.maximum)
    }

    /// A smoothed bootstrap draw from `microseconds`, in logarithms: one of them chosen at random and moved by normal
    /// noise of Silverman's bandwidth (Silverman, *Density Estimation*, §3.4.2 and §6.4.1), a draw from their kernel
    /// density estimate. Replaying a recorded duration as it was makes dummies repeat real requests' latencies, which
    /// an observer comparing each latency with the ones before it notices. The kernel's noise also widens the draws
    /// a little beyond the durations' own spread, and that is wanted: a real request's latency as a client sees it
    /// varies more around the recent ones than the service's measurement of it does (the database and the peer
    /// finish their work while its answer travels). With draws that kept the durations' variance, dummies stayed
    /// closer to the latencies before them than real ones (`cwa privacy-pool`'s classifier: 51.8 % right of 9,520,
    /// p = 0.0002); with the kernel's noise, 50.5–51.9 % in three checks (p = 0.17, 0.002, 0.0002), so a classifier
    /// still finds a trace. Nil for no durations.
    package static func smoothedDraw(
        from microseconds: [Int],
        using generator: inout some RandomNumberGenerator
    ) -> Int? {
        guard !microseconds.isEmpty else { return nil }
        let logs = microseconds.map { log(Double(max($0, 1))) }
        let index = Int.random(in: 0..<logs.count, using: &generator)
        let count = Double(logs.count)
        let mean = logs.reduce(0, +) / count
        let deviation = (logs.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / max(count - 1, 1)).squareRoot()
        let sorted = logs.sorted()
        let quartiles = sorted[(3 * sorted.count) / 4] - sorted[sorted.count / 4]
        let spread = quartiles > 0 ? min(deviation, quartiles / 1.349) : deviation
        let bandwidth = 0.9 * spread * pow(count, -0.2)
        guard bandwidth > 0 else { return microseconds[index] }
        return Int(exp(logs[index] + bandwidth * Self.standardNormal(using: &generator)).rounded())
    }

    /// A standard normal number (Box–Muller).
    package static func standardNormal(using generator: inout some RandomNumberGenerator) -> Double {
        let u1 = Double.random(in: Double.ulpOfOne..<1, using: &generator)
        let u2 = Double.random(in: 0..<1, using: &generator)
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }

    /// How long before its end a dummy stops sleeping and stays awake (yielding to other tasks), so that its answer
    /// leaves a machine as awake as a real request's does. Measured through the gateway (`make privacy-check`, 2
    /// cores, 5,000 + 5,000 submissions): when dummies slept to their end, their answers reached the client 0.1 ms
    /// later than real ones at every percentile (median +0.096 ms), a time no measurement in the service sees, in the
    /// request's task or on the connection's event loop; staying awake for the last 0.5 ms brought that to
    /// +0.03–0.05 ms. Each dummy costs at most this much processor time for it.
    package static let awake: Duration = .microseconds(500)

    /// Lets a dummy that started at `started` end when `delay` has passed since then: it sleeps by `sleep` until
    /// `awake` before the end, shortened by how late recent sleeps woke up (this one's lateness is folded in, weight
    /// 1/16, at most 5 ms), then stays awake until the end, at most `awake` after the sleep returned.
    package func wait(
        for delay: Duration,
        since started: ContinuousClock.Instant,
        sleep: (Duration) async throws -> Void
    ) async throws {
        let end = started + delay
        let remaining =
            end - ContinuousClock.now - Self.awake - .microseconds(self.lateness.load(ordering: .relaxed))
        if remaining > .zero {
            let before = ContinuousClock.now
            try await sleep(remaining)
            let late = min(Self.microseconds(ContinuousClock.now - before - remaining), 5000)
            Self.step(self.lateness, towards: late, weight: 16)
        }
        let awakeUntil = min(end, ContinuousClock.now + Self.awake)
        while ContinuousClock.now < awakeUntil, !Task.isCancelled { await Task.yield() }
    }

    /// Moves a moving average `1/weight` of the way towards `sample`; a compare-and-exchange, retried when another
    /// task moved it meanwhile, so the average stays between the values it was moved towards.
    private static func step(_ average: borrowing Atomic<Int>, towards sample: Int, weight: Int) {
        var current = average.load(ordering: .relaxed)
        while true {
            let (exchanged, found) = average.compareExchange(
                expected: current,
                desired: current + (sample - current) / weight,
                ordering: .relaxed
            )
            if exchanged { return }
            current = found
        }
    }

    /// How dummies sleep in production: a timer of SwiftNIO's event loops (timerfd, nanosecond resolution), which
    /// wakes up closer to the asked time than `Task.sleep`'s dispatch timer, so fewer corrections are needed.
    @Sendable package static func eventLoopSleep(_ duration: Duration) async throws {
        try await MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(duration)) {}.futureResult
            .get()
    }

    /// The current correction for late wake-ups.
    package var wakeUpLateness: Duration { .microseconds(self.lateness.load(ordering: .relaxed)) }

    /// Knuth's method for small means; above 30 the normal approximation, which is close and needs no loop.
    package static func poisson(mean: Double, using generator: inout some RandomNumberGenerator) -> Int {
        guard mean > 0 else { return 0 }
        if mean < 30 {
            let limit = exp(-mean)
            var product = Double.random(in: 0..<1, using: &generator)
            var count = 0
            while product > limit {
                count += 1
                product *= Double.random(in: 0..<1, using: &generator)
            }
            return count
        }
        return max(0, Int((mean + Self.standardNormal(using: &generator) * mean.squareRoot()).rounded()))
    }

    private static func microseconds(_ duration: Duration) -> Int {
        max(0, Int(duration / .microseconds(1)))
    }
}
