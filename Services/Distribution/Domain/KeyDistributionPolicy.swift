// The thresholds and windows of key distribution (cwa-server §3.2–§3.4, §3.9), each a setting with the reference's
// default.

import ENModels
import ENServiceKit

/// What is published, when, and in which country folder.
struct KeyDistributionPolicy: Sendable, Equatable {
    /// Keys with a lower transmission risk level are stored and federated but never published (§3.2).
    var minimumTRL = 3
    /// Keys submitted in the last this many days are published (`DAYS_TO_PUBLISH`).
    var daysToPublish = 10
    /// A key is published at least this long after it expired (`expiry-policy-minutes`).
    var expiryPolicyMinutes = 120
    /// Hours accumulate keys until at least this many can be published together (`shifting-policy-threshold`).
    var shiftingThreshold = 140
    /// No day or hour archive holds more keys (`maximum-number-of-keys-per-bundle`); the keys that do not fit move on
    /// to later hours (`KeyBundler.capped`).
    var maxKeysPerBundle = 600_000
    var originCountry = "DE"
    /// The folder of the union of every country's keys (`eu-package-name`).
    var euPackageName = "EUR"
    /// Countries that have a bucket; a visited country outside this set is ignored.
    var supportedCountries: Set<String> = Set(CountryCode.euGateway)
    /// Whether the expiry and shifting policies also apply to other countries' buckets.
    var applyPoliciesForAllCountries = false
    var includeIncompleteDays = false
    var includeIncompleteHours = false
    /// An hour counts as complete this long after it ended (`HOUR_COMPLETE_AFTER`): a submission is dated just before
    /// its write transaction, so one dated into the hour's last seconds may still be committing (a request's database
    /// work ends at its 20 s deadline, the recovery's at `statement_timeout`), and a key committed into
    /// an hour already published would reach phones only with its day's archive, or never when that is out too. Not
    /// applied with `INCLUDE_INCOMPLETE_HOURS`, which publishes the hour in progress anyway.
    var hourCompleteAfter: Duration = .seconds(60)
    /// Hour folders exist for the dates after today minus this many days (2: yesterday and today).
    var hourFileRetentionDays = 2
    /// Rows and published objects older than this many days are deleted (§3.9).
    var retentionDays = 14

    init() {}

    init(settings: SettingsReader) {
        let defaults = KeyDistributionPolicy()
        self.minimumTRL = settings.int(
            "MINIMUM_TRL_VALUE_ALLOWED",
            default: defaults.minimumTRL,
            range: 1...8,
            help: "Lowest transmission risk level that is published."
        )
        self.daysToPublish = settings.int(
            "DAYS_TO_PUBLISH",
            default: defaults.daysToPublish,
            range: 1...14,
            help: "Days of submissions published."
        )
        self.expiryPolicyMinutes = settings.int(
            "EXPIRY_POLICY_MINUTES",
            default: defaults.expiryPolicyMinutes,
            range: 0...1440,
            help: "Least time between a key's expiry and its publication."
        )
        self.shiftingThreshold = settings.int(
            "SHIFTING_POLICY_THRESHOLD",
            default: defaults.shiftingThreshold,
            range: 1...100_000,
            help: "Fewest keys an hour file of the origin country holds; smaller hours wait (and publish empty files)."
        )
        self.maxKeysPerBundle = settings.int(
            "MAX_KEYS_PER_BUNDLE",
            default: defaults.maxKeysPerBundle,
            range: 1...10_000_000,
            help: "Most keys in one day or hour archive; the keys that do not fit go into later hours (and their day)."
        )
        self.originCountry = settings.string(
            "ORIGIN_COUNTRY",
            default: defaults.originCountry,
            help: "This country's ISO 3166 code."
        )
        if !CountryCode.isValid(self.originCountry) {
            settings.report("ORIGIN_COUNTRY", "must be an ISO 3166 alpha-2 code in upper case, such as DE")
        }
        self.euPackageName = settings.string(
            "EU_PACKAGE_NAME",
            default: defaults.euPackageName,
            help: "Folder of every country's keys."
        )
        if self.euPackageName.isEmpty || self.euPackageName.contains("/") || self.euPackageName == self.originCountry {
            settings.report("EU_PACKAGE_NAME", "must be a folder name other than the origin country")
        }
        let supported = settings.list(
            "SUPPORTED_COUNTRIES",
            help: "Comma-separated ISO 3166 codes that have a key bucket (default: the EU gateway's countries)."
        )
        if let bad = supported.first(where: { !CountryCode.isValid($0) }) {
            settings.report(
                "SUPPORTED_COUNTRIES",
                "holds '\(bad)', which is not an ISO 3166 alpha-2 code in upper case"
            )
        }
        self.supportedCountries = Set((supported.isEmpty ? CountryCode.euGateway : supported) + [self.originCountry])
        self.applyPoliciesForAllCountries = settings.bool(
            "APPLY_POLICIES_FOR_ALL_COUNTRIES",
            default: false,
            help: "Apply the expiry and shifting policies to other countries' keys too."
        )
        self.includeIncompleteDays = settings.bool(
            "INCLUDE_INCOMPLETE_DAYS",
            default: false,
            help: "Publish today's day file (demo only)."
        )
        self.includeIncompleteHours = settings.bool(
            "INCLUDE_INCOMPLETE_HOURS",
            default: false,
            help: "Publish the current hour's file (demo only)."
        )
        self.hourCompleteAfter = settings.duration(
            "HOUR_COMPLETE_AFTER",
            default: defaults.hourCompleteAfter,
            help:
                "How long after its end an hour counts as complete (submissions of its last seconds may still be committing)."
        )
        self.hourFileRetentionDays = settings.int(
            "HOUR_FILE_RETENTION_DAYS",
            default: defaults.hourFileRetentionDays,
            range: 1...14,
            help: "Hour folders exist for the dates after today minus this many days."
        )
        self.retentionDays = settings.int(
            "RETENTION_DAYS",
            default: defaults.retentionDays,
            range: 1...90,
            help: "Rows and published files older than this many days are deleted."
        )
        if self.daysToPublish > self.retentionDays {
            settings.report("DAYS_TO_PUBLISH", "must not exceed RETENTION_DAYS")
        }
    }
}
