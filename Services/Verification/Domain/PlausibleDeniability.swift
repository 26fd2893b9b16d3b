// Fake requests that cannot be told from real ones by size or timing (cwa-satellites §1.5).

import ENServiceKit
import HTTPTypes

/// The three app-facing endpoints; each has its own timing estimate.
enum AppEndpoint: String, Sendable, CaseIterable {
    case registrationToken = "registration_token"
    case testResult = "test_result"
    case tan
}

/// How a request asked to be treated, from its `cwa-fake` header.
enum FakeMode: Equatable, Sendable {
    /// No header: a real request from a client that predates padding.
    case realWithoutHeader
    /// The header with a value other than `1`: a real request from a padding-aware client.
    case real
    /// `cwa-fake: 1`: a dummy that touches no state.
    case fake

    static let headerName = HTTPField.Name("cwa-fake")!

    init(_ headers: HTTPFields) {
        switch headers[Self.headerName] {
        case nil: self = .realWithoutHeader
        case "1": self = .fake
        default: self = .real
        }
    }

    /// Whether the response carries `responsePadding`; the result poll always does (§1.5).
    func pads(_ endpoint: AppEndpoint) -> Bool {
        endpoint == .testResult || self != .realWithoutHeader
    }
}

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

/// Random alphanumeric filler for `responsePadding`.
enum ResponsePadding {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    static func random(count: Int, using generator: inout some RandomNumberGenerator) -> String {
        String(decoding: (0..<count).map { _ in self.alphabet.randomElement(using: &generator)! }, as: UTF8.self)
    }

    static func random(count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return self.random(count: count, using: &generator)
    }
}
