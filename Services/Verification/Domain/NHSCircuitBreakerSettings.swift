// The circuit breakers' settings (nhs §7).

import ENServiceKit

/// `NHS_CB_*`: how long a token answers, and when the automatic rule holds requests.
struct NHSCircuitBreakerSettings: Sendable {
    /// `NHS_CB_TOKEN_LIFETIME`: how long an approval token can be polled (24 h).
    var tokenLifetime: Duration
    /// `NHS_CB_SPIKE_MULTIPLE`: the rule holds new requests when the last hour's exceed this multiple of the median of
    /// the same hour on the 7 days before (3).
    var spikeMultiple: Int
    /// `NHS_CB_SPIKE_MINIMUM`: ... and at least this many (100), so a quiet week does not hold every request.
    var spikeMinimum: Int
    /// How long an officer's release quiets the rule (1 h): the spike was judged genuine.
    var releaseQuiet: Duration = .seconds(3600)

    init(settings: SettingsReader) {
        self.tokenLifetime = settings.duration(
            "NHS_CB_TOKEN_LIFETIME",
            default: .seconds(86_400),
            minimum: .seconds(60),
            help: "How long a circuit-breaker approval token answers its resolution polls."
        )
        self.spikeMultiple = settings.int(
            "NHS_CB_SPIKE_MULTIPLE",
            default: 3,
            range: 1...1000,
            help: "Hold new circuit-breaker requests when the last hour's exceed this multiple of the 7-day median of "
                + "the same hour."
        )
        self.spikeMinimum = settings.int(
            "NHS_CB_SPIKE_MINIMUM",
            default: 100,
            range: 1...100_000_000,
            help: "The automatic rule holds requests only above this many in the last hour."
        )
    }
}
