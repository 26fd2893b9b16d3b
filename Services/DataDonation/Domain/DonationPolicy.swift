// The limits and lifetimes of data donation (cwa-satellites §4.2–§4.5), as settings.

import ENServiceKit
import Foundation

/// The quotas the write transaction enforces.
struct QuotaPolicy: Sendable, Equatable {
    /// How long after its first use a salt may be used again (`attestation-validity`, 7200 s, §4.2 step 1).
    var saltValidity: TimeInterval = 7200
    /// An iOS API token's analytics quota: once per 86,100 s (§4.3 step 2).
    var analyticsInterval: TimeInterval = 86_100
    /// An iOS API token's, and an Android ID's, self-report quota: once per 90 days (§4.2 step 10, §4.3 step 2).
    var selfReportInterval: TimeInterval = 90 * 86_400
}

/// How long what is stored is kept (§4.5), and how often the retention pass runs.
struct DonationRetention: Sendable, Equatable {
    var interval: Duration = .seconds(3600)
    /// Test results, key submissions, exposure windows, client metadata: 14 days.
    var analytics: TimeInterval = 14 * 86_400
    /// Exposure risk metadata: 99,999 days in the reference (the "PPA Risk CSVs").
    var riskMetadata: TimeInterval = 99_999 * 86_400
    /// OTPs of every kind, counted from redemption or expiry: 7 days.
    var otp: TimeInterval = 7 * 86_400
    /// API tokens past their expiration date: 2 days.
    var apiTokenAfterExpiry: TimeInterval = 2 * 86_400
    var deviceToken: TimeInterval = 86_400
    var salt: TimeInterval = 86_400

    init() {}

    init(settings: SettingsReader) {
        let defaults = DonationRetention()
        self.interval = settings.duration(
            "RETENTION_INTERVAL",
            default: defaults.interval,
            minimum: .seconds(1),
            help: "Time between retention passes."
        )
        func days(_ name: String, _ value: TimeInterval, _ help: String) -> TimeInterval {
            TimeInterval(settings.int(name, default: Int(value / 86_400), range: 1...99_999, help: help)) * 86_400
        }
        self.analytics = days(
            "RETENTION_ANALYTICS_DAYS",
            defaults.analytics,
            "Days test-result, key-submission, exposure-window and client rows are kept."
        )
        self.riskMetadata = days(
            "RETENTION_RISK_METADATA_DAYS",
            defaults.riskMetadata,
            "Days exposure-risk rows are kept."
        )
        self.otp = days("RETENTION_OTP_DAYS", defaults.otp, "Days an OTP is kept after its redemption or expiry.")
    }
}

/// How long OTPs live (§4.1).
struct OTPLifetimes: Sendable, Equatable {
    var survey: TimeInterval = 3600
    var errorLog: TimeInterval = 3600
    var selfReport: TimeInterval = 1800

    func lifetime(_ kind: OTPKind) -> TimeInterval {
        switch kind {
        case .survey: self.survey
        case .errorLog: self.errorLog
        case .selfReport: self.selfReport
        }
    }
}
