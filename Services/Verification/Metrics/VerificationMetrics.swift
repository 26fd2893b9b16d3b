// The service's own metrics, prefixed `en_verification_`. Labels are low-cardinality; no value is ever a secret.

import Metrics

struct VerificationMetrics: Sendable {
    private let factory: any MetricsFactory

    /// Registers every label set of the registrations at 0, which `RegistrationsNearDailyCap` and
    /// `RegistrationsCapped` (deploy/observability/alerts.yaml) read with `increase()`: a counter that first appeared
    /// at 1 would hide the first capped registration.
    init(factory: any MetricsFactory) {
        self.factory = factory
        for keyType in ["guid", "teletan"] {
            for outcome in ["created", "rejected", "capped"] {
                self.count("en_verification_registrations_total", [("key_type", keyType), ("outcome", outcome)], by: 0)
            }
        }
    }

    /// A registration attempt by key type (`guid`, `teletan`) and outcome (`created`, `rejected`, `capped`: refused
    /// by the daily cap).
    func recordRegistration(keyType: String, outcome: String) {
        self.count("en_verification_registrations_total", [("key_type", keyType), ("outcome", outcome)])
    }

    /// The configured `REGISTRATIONS_PER_DAY`, for the alert that compares the day's registrations with it.
    func recordRegistrationCap(_ cap: Int) {
        Gauge(label: "en_verification_registrations_daily_cap", factory: self.factory).record(cap)
    }

    /// A TAN issued, by source (`connected_lab`, `teletan`).
    func recordTANIssued(source: String) {
        self.count("en_verification_tans_issued_total", [("source", source)])
    }

    /// A TAN verification by the submission service (`verified`, `rejected`).
    func recordTANVerification(outcome: String) {
        self.count("en_verification_tan_verifications_total", [("outcome", outcome)])
    }

    /// A teleTAN request, by type and outcome (`created`, `rate_limited`, `unauthorized`, `busy`).
    func recordTeleTAN(type: TeleTANType, outcome: String) {
        self.count("en_verification_teletans_total", [("type", type.rawValue.lowercased()), ("outcome", outcome)])
    }

    /// A dummy request answered, by endpoint.
    func recordFake(_ endpoint: AppEndpoint) {
        self.count("en_verification_fake_requests_total", [("endpoint", endpoint.rawValue)])
    }

    /// A result poll or TAN request that could not reach test-result-service.
    func recordUpstreamFailure() {
        self.count("en_verification_test_result_unavailable_total", [])
    }

    func recordRetention(_ outcome: VerificationRetentionOutcome) {
        for (entity, count) in [
            ("session", outcome.sessions), ("tan", outcome.tans), ("teletan", outcome.teleTANs),
            ("nhs_order", outcome.nhsOrders), ("nhs_ipc_token", outcome.nhsIsolationPaymentTokens),
            ("nhs_cb_request", outcome.nhsCircuitBreakerRequests),
        ] {
            Counter(
                label: "en_verification_retention_deleted_total",
                dimensions: [("entity", entity)],
                factory: self.factory
            ).increment(by: count)
        }
    }

    private func count(_ label: String, _ dimensions: [(String, String)], by amount: Int = 1) {
        Counter(label: label, dimensions: dimensions, factory: self.factory).increment(by: amount)
    }
}
