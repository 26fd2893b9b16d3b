// The isolation payment settings (nhs §8).

import ENServiceKit

/// `NHS_IPC_*`: who may get a token, where a claim is made, and how long an unclaimed token lives.
struct NHSIsolationPaymentSettings: Sendable {
    /// `NHS_IPC_TOKEN_CREATION_ENABLED`: off, `create` and `update` answer 503 (the reference's `TOKEN_CREATION_ENABLED`).
    var creationEnabled: Bool
    /// `NHS_IPC_COUNTRIES`: the countries whose residents can claim (`COUNTRIES_WHITELISTED`); others get
    /// `isEnabled: false`.
    var countries: Set<String>
    /// `NHS_IPC_WEBSITE`: the claim page; `?ipcToken=<token>` is appended.
    var website: String
    /// `NHS_IPC_TOKEN_LIFETIME`: how long a created token waits for its update (`TOKEN_EXPIRY_IN_WEEKS`, 2 weeks).
    var tokenLifetime: Duration

    init(settings: SettingsReader) {
        self.creationEnabled = settings.bool(
            "NHS_IPC_TOKEN_CREATION_ENABLED",
            default: true,
            help: "Issue and unlock isolation payment tokens; off, create and update answer 503."
        )
        self.countries = Set(
            settings.list(
                "NHS_IPC_COUNTRIES",
                help: "Countries whose residents can claim an isolation payment (default England,Wales)."
            )
        )
        if self.countries.isEmpty { self.countries = ["England", "Wales"] }
        self.website = settings.httpURL(
            "NHS_IPC_WEBSITE",
            default: "https://isolation-payment.invalid/claim",
            help:
                "The isolation payment claim page; ?ipcToken=<token> is appended. Set it: the default is a placeholder."
        )
        self.tokenLifetime = settings.duration(
            "NHS_IPC_TOKEN_LIFETIME",
            default: .seconds(14 * 86_400),
            minimum: .seconds(3600),
            help: "How long a created isolation payment token waits for the app's update."
        )
    }
}
