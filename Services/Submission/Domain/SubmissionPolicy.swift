// The limits of a submission (cwa-server §1.4–§1.10), read from the settings.

import ENModels
import ENServiceKit
import Foundation

/// What a submission may contain and how it is stored.
struct SubmissionPolicy: Sendable, Equatable {
    /// Most keys in one payload (`MAX_NUMBER_OF_KEYS`, the reference allows 7…100).
    var maxKeys = 14
    /// The only origin a payload may name; an empty origin becomes this one.
    var originCountry = "DE"
    /// Countries a key may have been visited in.
    var supportedCountries: Set<String> = Set(CountryCode.euGateway)
    var minRollingPeriod = 1
    var maxRollingPeriod = 144
    /// Keys whose interval started before today's midnight (UTC) minus this many days are dropped.
    var retentionDays = 14
    /// TRL of a key whose DSOS the derivation map does not know.
    var defaultTRL = 1
    /// Stored keys per real key: `multiplier − 1` random copies are added (§1.9).
    var keyPaddingMultiplier = 1
    /// Self-reports are refused (429) once today's keys (UTC, any type) reach this many (§1.13).
    var maxKeysPerDay = 1_000_000
    /// A self-report's keys older than this many days (from today's midnight UTC) are dropped, and the answer says
    /// so in `cwa-keys-truncated` (the reference's `srs-days`).
    var selfReportDays = 14
    var checkIns = CheckInPolicy()
    var derivations = TEKFieldDerivations.bundled

    init() {}

    init(settings: SettingsReader) {
        let defaults = SubmissionPolicy()
        self.maxKeys = settings.int(
            "MAX_NUMBER_OF_KEYS",
            default: defaults.maxKeys,
            range: 7...100,
            help: "Most keys in one submission."
        )
        self.originCountry = settings.string(
            "ORIGIN_COUNTRY",
            default: defaults.originCountry,
            help: "ISO 3166 alpha-2 code of this country; the only origin a submission may name."
        )
        if !CountryCode.isValid(self.originCountry) {
            settings.report("ORIGIN_COUNTRY", "must be an ISO 3166 alpha-2 code in upper case, such as DE")
        }
        let supported = settings.list(
            "SUPPORTED_COUNTRIES",
            help:
                "Comma-separated ISO 3166 alpha-2 codes keys may have been visited in (default: the EU gateway's countries)."
        )
        if let bad = supported.first(where: { !CountryCode.isValid($0) }) {
            settings.report(
                "SUPPORTED_COUNTRIES",
                "holds '\(bad)', which is not an ISO 3166 alpha-2 code in upper case"
            )
        }
        self.supportedCountries = Set(supported.isEmpty ? CountryCode.euGateway : supported + [self.originCountry])
        self.minRollingPeriod = settings.int(
            "MIN_ROLLING_PERIOD",
            default: defaults.minRollingPeriod,
            range: 1...144,
            help: "Shortest rolling period of a key."
        )
        self.maxRollingPeriod = settings.int(
            "MAX_ROLLING_PERIOD",
            default: defaults.maxRollingPeriod,
            range: 1...144,
            help: "Longest rolling period of a key; rolling start intervals must be multiples of it."
        )
        if self.minRollingPeriod > self.maxRollingPeriod {
            settings.report("MIN_ROLLING_PERIOD", "must not exceed MAX_ROLLING_PERIOD")
        }
        self.retentionDays = settings.int(
            "RETENTION_DAYS",
            default: defaults.retentionDays,
            range: 1...90,
            help: "Keys older than this many days (from today's midnight UTC) are dropped."
        )
        self.defaultTRL = settings.int(
            "DEFAULT_TRL",
            default: defaults.defaultTRL,
            range: 1...8,
            help: "TRL of a key whose DSOS the derivation map lacks."
        )
        self.keyPaddingMultiplier = settings.int(
            "RANDOM_KEY_PADDING_MULTIPLIER",
            default: defaults.keyPaddingMultiplier,
            range: 1...25,
            help: "Keys stored per submitted key (the extra ones have random key data)."
        )
        self.maxKeysPerDay = settings.int(
            "MAX_KEYS_PER_DAY",
            default: defaults.maxKeysPerDay,
            range: 1...100_000_000,
            help: "Self-report submissions get 429 once this many keys (any type) were stored today (UTC)."
        )
        self.selfReportDays = settings.int(
            "MAX_NUMBER_OF_DAYS_FOR_SRS",
            default: defaults.selfReportDays,
            range: 1...90,
            help: "Self-reported keys older than this many days (from today's midnight UTC) are dropped."
        )
        self.checkIns = CheckInPolicy(settings: settings)
    }
}

/// How check-ins are stored (§1.10).
struct CheckInPolicy: Sendable, Equatable {
    /// Whether the deprecated unencrypted `checkIns` are stored at all.
    var unencryptedEnabled = false
    /// More unencrypted check-ins than this on one day: all of them are dropped.
    var maxPerDay = 20
    /// Unencrypted check-ins that ended more than this many days ago are dropped.
    var acceptedEventDateThresholdDays = 10
    /// Most check-ins of either kind in one submission: 20 a day for 14 days.
    var maxPerSubmission = 280
    /// Fake trace warnings stored per real unencrypted check-in.
    var paddingMultiplier = 1
    /// Secret bytes mixed into the location ids of fake check-ins, so they cannot be recomputed.
    var paddingPepper: [UInt8] = Array(UUID().uuidString.utf8)

    init() {}

    init(settings: SettingsReader) {
        let defaults = CheckInPolicy()
        self.unencryptedEnabled = settings.bool(
            "UNENCRYPTED_CHECKINS_ENABLED",
            default: defaults.unencryptedEnabled,
            help: "Store the deprecated unencrypted check-ins as trace time interval warnings."
        )
        self.maxPerDay = settings.int(
            "MAX_ALLOWED_CHECKINS_PER_DAY",
            default: defaults.maxPerDay,
            range: 1...1000,
            help: "A day with more unencrypted check-ins than this drops all of them."
        )
        self.maxPerSubmission = settings.int(
            "MAX_CHECKINS_PER_SUBMISSION",
            default: defaults.maxPerSubmission,
            range: 1...999,
            help: "Most encrypted and most unencrypted check-ins one submission may hold; more get 400."
        )
        self.acceptedEventDateThresholdDays = settings.int(
            "ACCEPTED_EVENT_DATE_THRESHOLD_DAYS",
            default: defaults.acceptedEventDateThresholdDays,
            range: 1...90,
            help: "Unencrypted check-ins that ended more than this many days ago are dropped."
        )
        self.paddingMultiplier = settings.int(
            "RANDOM_CHECKINS_PADDING_MULTIPLIER",
            default: defaults.paddingMultiplier,
            range: 0...100,
            help: "Fake trace warnings stored per unencrypted check-in."
        )
        if let pepper = settings.optionalString(
            "RANDOM_CHECKINS_PADDING_PEPPER",
            secret: true,
            help: "Secret mixed into fake check-ins' location ids (default: random per process)."
        ) {
            self.paddingPepper = Array(pepper.utf8)
        }
    }
}
