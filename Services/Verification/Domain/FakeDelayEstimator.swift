// How long fake requests wait: like the real requests of their endpoint (cwa-satellites §1.5).

import ENServiceKit

/// Per-endpoint records of the duration of real requests, and delays for fake ones drawn from them.
///
/// The reference keeps one average per endpoint but its update methods for two endpoints write into the TAN
/// average (§1.5); here each endpoint's estimate is updated only by that endpoint's real requests.
struct FakeDelayEstimator: Sendable {
    private let delays: [AppEndpoint: FakeDelay]

    /// - Parameters:
    ///   - initial: the estimate before any real request was measured (the reference: 10 ms).
    ///   - samples: weight of the past in the moving average (the reference: 5).
    init(initial: Duration = .milliseconds(10), samples: Int = 5) {
        self.delays = Dictionary(
            uniqueKeysWithValues: AppEndpoint.allCases.map { ($0, FakeDelay(initial: initial, samples: samples)) }
        )
    }

    init(_ settings: FakeDelay.Settings) {
        self.init(initial: settings.initial, samples: settings.samples)
    }

    /// Folds the duration of a completed real request into that endpoint's average.
    func record(_ endpoint: AppEndpoint, duration: Duration) {
        self.delays[endpoint]?.record(duration)
    }

    /// The current estimate for `endpoint`.
    func average(_ endpoint: AppEndpoint) -> Duration {
        self.delays[endpoint]?.average ?? .zero
    }

    /// Waits until a dummy of `endpoint` that started at `started` has taken `delay` (see `FakeDelay.wait`).
    func wait(
        _ endpoint: AppEndpoint,
        for delay: Duration,
        since started: ContinuousClock.Instant,
        sleep: (Duration) async throws -> Void
    ) async throws {
        try await self.delays[endpoint]?.wait(for: delay, since: started, sleep: sleep)
    }

    /// The endpoint's next dummy delay: a recent real duration replayed (see `FakeDelay`).
    func delay(_ endpoint: AppEndpoint, using generator: inout some RandomNumberGenerator) -> Duration {
        self.delays[endpoint]?.delay(using: &generator) ?? .zero
    }
}
