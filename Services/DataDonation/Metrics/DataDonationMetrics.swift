// The service's own metrics, prefixed `en_datadonation_`. Labels are low-cardinality; no value is ever a secret.

import ENAttestation
import Metrics

struct DataDonationMetrics: Sendable {
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// An accepted request (stored), by platform and scenario (`analytics`, `survey`, `error_log`, `self_report`).
    func recordAccepted(platform: Platform, scenario: AttestationScenario) {
        self.count(
            "en_datadonation_requests_total",
            [("platform", platform.rawValue), ("scenario", Self.label(scenario)), ("outcome", "accepted")]
        )
        if scenario != .analytics {
            self.count("en_datadonation_otps_created_total", [("scenario", Self.label(scenario))])
        }
    }

    /// A refused request, by platform, scenario and the reference's error code (lower case).
    func recordRefused(platform: Platform, scenario: AttestationScenario, reason: String) {
        self.count(
            "en_datadonation_requests_total",
            [("platform", platform.rawValue), ("scenario", Self.label(scenario)), ("outcome", "refused")]
        )
        self.count(
            "en_datadonation_refusals_total",
            [("platform", platform.rawValue), ("scenario", Self.label(scenario)), ("reason", reason)]
        )
    }

    /// A dummy self-report answered.
    func recordFake(platform: Platform) {
        self.count("en_datadonation_fake_requests_total", [("platform", platform.rawValue)])
    }

    /// A redemption call, by OTP kind and the state it found (`valid` only for the call that redeemed it).
    func recordRedemption(kind: OTPKind, state: String) {
        self.count("en_datadonation_otp_redemptions_total", [("kind", kind.rawValue), ("state", state)])
    }

    func recordRetention(_ outcome: DonationRetentionOutcome) {
        for (table, count) in outcome.deleted {
            Counter(
                label: "en_datadonation_retention_deleted_total",
                dimensions: [("table", table)],
                factory: self.factory
            ).increment(by: count)
        }
    }

    /// The scenario as a label value, spelled as the OTP kinds are (`error_log`, `self_report`).
    private static func label(_ scenario: AttestationScenario) -> String {
        switch scenario {
        case .analytics: "analytics"
        case .survey: OTPKind.survey.rawValue
        case .errorLog: OTPKind.errorLog.rawValue
        case .selfReport: OTPKind.selfReport.rawValue
        }
    }

    private func count(_ label: String, _ dimensions: [(String, String)]) {
        Counter(label: label, dimensions: dimensions, factory: self.factory).increment()
    }
}
