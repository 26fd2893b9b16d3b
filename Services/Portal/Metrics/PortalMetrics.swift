// The service's Prometheus metrics (`en_portal_*`), read off the audit trail's actions.

import Metrics

/// Counts logins, lockouts and teleTANs as the engine audits them, so that the figures and the audit trail agree.
struct PortalMetrics: Sendable {
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// Counts what an audited `action` says:
    /// - `en_portal_logins_total{outcome}`: `success` (second factor accepted), `failure` (a wrong password or
    ///   code, an unknown user), `locked` (refused without a check: the account is locked or disabled);
    /// - `en_portal_lockouts_total`: accounts locked by a failed attempt;
    /// - `en_portal_teletans_total{outcome="issued"}` (refusals go through `teleTANRefused`).
    func audited(_ action: String) {
        switch action {
        case "login_succeeded": self.count("en_portal_logins_total", outcome: "success")
        case "login_failed", "totp_failed": self.count("en_portal_logins_total", outcome: "failure")
        case "login_refused": self.count("en_portal_logins_total", outcome: "locked")
        case "account_locked": Counter(label: "en_portal_lockouts_total", factory: self.factory).increment()
        case "teletan_issued": self.count("en_portal_teletans_total", outcome: "issued")
        default: break
        }
    }

    /// A teleTAN request that got none: the role, the officer's interval, verification-service's limit or its
    /// absence.
    func teleTANRefused() {
        self.count("en_portal_teletans_total", outcome: "refused")
    }

    private func count(_ label: String, outcome: String) {
        Counter(label: label, dimensions: [("outcome", outcome)], factory: self.factory).increment()
    }
}
