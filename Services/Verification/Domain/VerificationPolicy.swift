// Lifetimes and quotas of registration sessions, TANs and teleTANs (cwa-satellites §1.3–1.4, §1.6).

import ENServiceKit
import Foundation

/// The rules' numbers; defaults are the reference's configuration.
struct VerificationPolicy: Sendable, Equatable {
    /// TANs one registration token may obtain. The reference's docs say 2, its configuration 1 (§1.4).
    var tansPerRegistrationToken = 1
    /// How long a TAN can be verified after it was issued.
    var tanValidity: Duration = .seconds(14 * 86400)
    var teleTANTestValidity: Duration = .seconds(3600)
    var teleTANEventValidity: Duration = .seconds(2 * 86400)
    /// At most `teleTANRateLimit` teleTANs in any `teleTANRateWindow`, for the whole system (§1.4).
    var teleTANRateLimit = 1000
    var teleTANRateWindow: Duration = .seconds(3600)
    /// How long a teleTAN creation waits for the others ahead of it before it answers 503 (its pool connection is held
    /// while it waits).
    var teleTANLockTimeout: Duration = .seconds(2)
    /// Whether the app-facing result poll compares the GUID's and the DOB hash's results; the internal one always
    /// does (the reference's `disable-dob-hash-check-for-external-test-result`, inverted).
    var checkDOBOnExternalResult = true
    /// At most this many registrations (sessions, GUID and teleTAN together) are created per UTC day; more get 429
    /// until midnight UTC. Bounds what a flood of registrations can store, whatever addresses it comes from.
    var registrationsPerDay = 1_000_000

    init() {}

    init(settings: SettingsReader) {
        let defaults = VerificationPolicy()
        self.tansPerRegistrationToken = settings.int(
            "TAN_PER_REGISTRATION_TOKEN",
            default: defaults.tansPerRegistrationToken,
            range: 1...10,
            help: "TANs one registration token may obtain."
        )
        self.tanValidity = settings.duration(
            "TAN_VALIDITY",
            default: defaults.tanValidity,
            minimum: .seconds(60),
            help: "How long a TAN stays valid."
        )
        self.teleTANTestValidity = settings.duration(
            "TELETAN_TEST_VALIDITY",
            default: defaults.teleTANTestValidity,
            minimum: .seconds(60),
            help: "How long a teleTAN of type TEST can be redeemed."
        )
        self.teleTANEventValidity = settings.duration(
            "TELETAN_EVENT_VALIDITY",
            default: defaults.teleTANEventValidity,
            minimum: .seconds(60),
            help: "How long a teleTAN of type EVENT can be redeemed."
        )
        self.teleTANRateLimit = settings.int(
            "TELETAN_RATE_LIMIT",
            default: defaults.teleTANRateLimit,
            range: 1...1_000_000,
            help: "Most teleTANs created in one TELETAN_RATE_WINDOW, all callers together; more get 429."
        )
        self.teleTANRateWindow = settings.duration(
            "TELETAN_RATE_WINDOW",
            default: defaults.teleTANRateWindow,
            minimum: .seconds(1),
            help: "The sliding window of TELETAN_RATE_LIMIT."
        )
        self.teleTANLockTimeout = settings.duration(
            "TELETAN_LOCK_TIMEOUT",
            default: defaults.teleTANLockTimeout,
            help: "How long a teleTAN creation waits behind concurrent ones before it answers 503."
        )
        self.registrationsPerDay = settings.int(
            "REGISTRATIONS_PER_DAY",
            default: defaults.registrationsPerDay,
            range: 1...1_000_000_000,
            help: "Most registrations created per UTC day, all replicas together; more get 429 until midnight UTC."
        )
        self.checkDOBOnExternalResult = settings.bool(
            "DOB_HASH_CHECK_EXTERNAL",
            default: defaults.checkDOBOnExternalResult,
            help: "Compare the results of the GUID and the date-of-birth hash on the app's result poll (mismatch: 403)."
        )
    }

    func teleTANValidity(_ type: TeleTANType) -> Duration {
        switch type {
        case .test: self.teleTANTestValidity
        case .event: self.teleTANEventValidity
        }
    }
}

/// What the periodic clean-up deletes (§1.6) and how often it runs.
struct VerificationRetention: Sendable, Equatable {
    /// Sessions and TANs older than this are deleted (the reference's `entities.cleanup.days` = 21).
    var maxAge: Duration = .seconds(21 * 86400)
    var interval: Duration = .seconds(3600)
    /// How long the record of a spent TAN (which submission attempt spent it) is kept: submission-service asks for it
    /// to complete a submission whose keys it could not write after the TAN was spent.
    var redemptionRecord: Duration = .seconds(3 * 86400)

    init() {}

    init(settings: SettingsReader) {
        let defaults = VerificationRetention()
        self.maxAge = settings.duration(
            "ENTITY_RETENTION",
            default: defaults.maxAge,
            minimum: .seconds(3600),
            help: "Age after which registration sessions and TANs are deleted."
        )
        self.interval = settings.duration(
            "RETENTION_INTERVAL",
            default: defaults.interval,
            minimum: .seconds(1),
            help: "How often the clean-up runs."
        )
        self.redemptionRecord = settings.duration(
            "REDEMPTION_RETENTION",
            default: defaults.redemptionRecord,
            minimum: .seconds(3600),
            help:
                "How long a spent TAN's record of the submission that spent it is kept, for submission-service's recovery of a submission whose keys were not written."
        )
    }
}
