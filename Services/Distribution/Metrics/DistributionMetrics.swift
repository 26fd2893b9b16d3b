// The service's Prometheus metrics (`en_distribution_*`).

import ENKeyStore
import Metrics

/// Counters and gauges of distribution runs; the gauges describe the last completed run.
struct DistributionMetrics: Sendable {
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func runFinished(_ outcome: String, seconds: Double) {
        Counter(label: "en_distribution_runs_total", dimensions: [("outcome", outcome)], factory: self.factory)
            .increment()
        Gauge(label: "en_distribution_last_run_seconds", factory: self.factory).record(seconds)
    }

    func completed(_ report: RunReport) {
        Gauge(label: "en_distribution_keys_read", factory: self.factory).record(report.keysRead)
        Gauge(label: "en_distribution_archives_built", factory: self.factory).record(report.archivesBuilt)
        Gauge(label: "en_distribution_last_success_timestamp_seconds", factory: self.factory).record(report.finishedAt)
        for (action, count) in [
            ("uploaded", report.publish.uploaded), ("unchanged", report.publish.unchanged),
            ("deleted", report.objectsDeleted),
        ] {
            Counter(label: "en_distribution_objects_total", dimensions: [("action", action)], factory: self.factory)
                .increment(by: count)
        }
        Counter(label: "en_distribution_retention_rows_total", factory: self.factory)
            .increment(by: report.retention.keys + report.retention.checkInReports + report.retention.traceWarnings)
    }
}
