// How long a dummy request waits, so that its timing matches real requests of the same endpoint.

import Foundation
import Synchronization

/// A moving average of the durations of one endpoint's real requests, and Poisson-distributed delays around it
/// for its fake requests (cwa-server §1.11, cwa-satellites §1.5).
///
/// The average is one atomic integer of microseconds. Recording is wait-free: it loads the average and adds
/// `(sample − average) / samples`. Two concurrent recordings may both compute their step from the same
/// average; each step is still a step towards a real duration, so the estimate stays a moving average of
/// recent real durations, and no request ever waits for a lock on this hot path.
package final class FakeDelay: Sendable {
    private let microseconds: Atomic<Int>
    private let samples: Int
    /// The longest delay a fake request waits, and the longest real duration folded into the average.
    package static let maximum: Duration = .seconds(10)

    /// - Parameters:
    ///   - initial: the estimate before any real request was measured (the reference: 10 ms).
    ///   - samples: weight of the past in the moving average (the reference: 10 for submission, 5 for verification).
    package init(initial: Duration = .milliseconds(10), samples: Int) {
        self.microseconds = Atomic(Self.microseconds(initial))
        self.samples = max(1, samples)
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

    /// Folds the duration of a completed real request into the average.
    package func record(_ duration: Duration) {
        let sample = Self.microseconds(min(duration, Self.maximum))
        let current = self.microseconds.load(ordering: .relaxed)
        self.microseconds.wrappingAdd((sample - current) / self.samples, ordering: .relaxed)
    }

    /// The current estimate.
    package var average: Duration {
        .microseconds(self.microseconds.load(ordering: .relaxed))
    }

    /// A Poisson-distributed number of milliseconds with the average as mean, capped at `maximum`.
    package func delay(using generator: inout some RandomNumberGenerator) -> Duration {
        let mean = Double(self.microseconds.load(ordering: .relaxed)) / 1000
        return min(.milliseconds(Self.poisson(mean: mean, using: &generator)), Self.maximum)
    }

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
        // Box–Muller.
        let u1 = Double.random(in: Double.ulpOfOne..<1, using: &generator)
        let u2 = Double.random(in: 0..<1, using: &generator)
        let normal = (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
        return max(0, Int((mean + normal * mean.squareRoot()).rounded()))
    }

    private static func microseconds(_ duration: Duration) -> Int {
        max(0, Int(duration / .microseconds(1)))
    }
}
