// The service's own metrics, prefixed `en_submission_`. Labels are low-cardinality; no value is ever a secret.

import ENKeyStore
import Foundation
import Metrics

/// The two app-facing endpoints; each has its own fake-delay estimate and metric label.
enum SubmissionEndpoint: String, Sendable, CaseIterable {
    case diagnosisKeys = "diagnosis_keys"
    case onBehalf = "submission_on_behalf"
}

struct SubmissionMetrics: Sendable {
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// A request answered, by endpoint and kind (`real`, `fake`).
    func recordRequest(_ endpoint: SubmissionEndpoint, fake: Bool) {
        self.count("en_submission_requests_total", [("endpoint", endpoint.rawValue), ("kind", fake ? "fake" : "real")])
    }

    /// A payload that broke `rule`.
    func recordRejected(_ endpoint: SubmissionEndpoint, rule: String) {
        self.count("en_submission_rejected_total", [("endpoint", endpoint.rawValue), ("rule", rule)])
    }

    /// A TAN verification-service refused, or of the wrong kind for the endpoint.
    func recordInvalidTAN(_ endpoint: SubmissionEndpoint) {
        self.count("en_submission_invalid_tan_total", [("endpoint", endpoint.rawValue)])
    }

    /// A submission on behalf stored.
    func recordOnBehalf() {
        self.count("en_submission_on_behalf_total", [])
    }

    /// A self-report stored, by submission type (`SUBMISSION_TYPE_SRS_…`, seven values), and how many of its keys
    /// were dropped for being older than `MAX_NUMBER_OF_DAYS_FOR_SRS`.
    func recordSelfReport(type: String, truncatedKeys: Int) {
        self.count("en_submission_self_reports_total", [("type", type)])
        Counter(label: "en_submission_keys_truncated_total", factory: self.factory).increment(by: truncatedKeys)
    }

    /// A self-report OTP refused: `malformed` (not a UUID) or `rejected` (by data-donation-service).
    func recordInvalidOTP(reason: String) {
        self.count("en_submission_invalid_otp_total", [("reason", reason)])
    }

    /// A self-report refused before its OTP was redeemed: `daily_limit` (429) or `keys_exist` (400).
    func recordSelfReportRefused(reason: String) {
        self.count("en_submission_self_report_refused_total", [("reason", reason)])
    }

    /// verification-service, data-donation-service (`data_donation`) or the database could not be reached.
    func recordUnavailable(_ endpoint: SubmissionEndpoint, dependency: String) {
        self.count("en_submission_unavailable_total", [("endpoint", endpoint.rawValue), ("dependency", dependency)])
    }

    /// What a stored submission held.
    func recordStored(_ outcome: KeySubmissionOutcome, dropped: Int, filtered: Int) {
        Counter(label: "en_submission_keys_stored_total", factory: self.factory).increment(by: outcome.keys)
        Counter(label: "en_submission_keys_dropped_total", factory: self.factory).increment(by: dropped)
        Counter(
            label: "en_submission_checkins_stored_total",
            dimensions: [("kind", "protected")],
            factory: self.factory
        )
        .increment(by: outcome.protectedReports)
        Counter(
            label: "en_submission_checkins_stored_total",
            dimensions: [("kind", "trace_warning")],
            factory: self.factory
        )
        .increment(by: outcome.traceWarnings)
        Counter(label: "en_submission_checkins_filtered_total", factory: self.factory).increment(by: filtered)
    }

    /// A pass of the recovery of held submissions: what it resolved, and how many attempts are held after it and
    /// since when the oldest (`nil` when counting them failed: the gauges keep their last values).
    func recordRecovery(_ outcome: SubmissionRecovery.Outcome, held: HeldAttemptCount?) {
        for (label, count) in [
            ("completed", outcome.completed), ("released", outcome.released), ("unconfirmed", outcome.unconfirmed),
            ("waiting", outcome.waiting), ("deferred", outcome.deferred),
        ] {
            Counter(label: "en_submission_recovered_total", dimensions: [("outcome", label)], factory: self.factory)
                .increment(by: count)
        }
        guard let held else { return }
        Gauge(label: "en_submission_held_attempts", factory: self.factory).record(held.count)
        Gauge(label: "en_submission_oldest_held_attempt_timestamp_seconds", factory: self.factory)
            .record(held.oldest?.timeIntervalSince1970 ?? 0)
    }

    /// The duration of a real request, and the fake-delay estimate it moved.
    func recordDuration(_ endpoint: SubmissionEndpoint, _ duration: Duration, fakeDelay: Duration) {
        Timer(
            label: "en_submission_duration_seconds",
            dimensions: [("endpoint", endpoint.rawValue)],
            factory: self.factory
        )
        .recordNanoseconds(Int64(duration / .nanoseconds(1)))
        Gauge(
            label: "en_submission_fake_delay_seconds",
            dimensions: [("endpoint", endpoint.rawValue)],
            factory: self.factory
        )
        .record(fakeDelay / .seconds(1))
    }

    private func count(_ label: String, _ dimensions: [(String, String)]) {
        Counter(label: label, dimensions: dimensions, factory: self.factory).increment()
    }
}
