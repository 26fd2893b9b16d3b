// The service's Prometheus metrics (`en_distribution_*`).

import ENKeyStore
import Metrics

/// Counters and gauges of distribution runs; the gauges describe the last completed run.
struct DistributionMetrics: Sendable {
    private let factory: any MetricsFactory

    /// Registers `en_distribution_audit_failures_total` at 0, which `DistributionAuditFailing`
    /// (deploy/observability/alerts.yaml) reads with `increase()`: had it first appeared at 1, a first run whose audit
    /// failed would not fire it.
    init(factory: any MetricsFactory) {
        self.factory = factory
        _ = Counter(label: "en_distribution_audit_failures_total", factory: factory)
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
        for (embargo, latencies) in [("none", report.latency.immediate), ("expiry", report.latency.embargoed)] {
            let recorder = Recorder(
                label: Self.publicationLatency,
                dimensions: [("embargo", embargo)],
                factory: self.factory
            )
            for seconds in latencies { recorder.record(seconds) }
        }
        Gauge(label: "en_distribution_oldest_unpublished_key_age_seconds", factory: self.factory)
            .record(report.latency.oldestWaiting)
        Counter(label: "en_distribution_audit_failures_total", factory: self.factory)
            .increment(by: report.auditFailed ? 1 : 0)
        if let audit = report.audit {
            for folder in audit.folders {
                Gauge(
                    label: "en_distribution_audit_missing_keys",
                    dimensions: [("folder", folder.folder)],
                    factory: self.factory
                ).record(folder.missingCount)
                Gauge(
                    label: "en_distribution_audit_unusable_archives",
                    dimensions: [("folder", folder.folder)],
                    factory: self.factory
                ).record(folder.badArchives.count)
            }
        }
        for (folder, effect) in report.sizes {
            Gauge(
                label: "en_distribution_keys_deferred_for_size",
                dimensions: [("folder", folder)],
                factory: self.factory
            )
            .record(effect.deferred)
            Gauge(label: "en_distribution_keys_held_for_size", dimensions: [("folder", folder)], factory: self.factory)
                .record(effect.heldBack)
        }
    }

    /// Seconds from a key's submission (hour) until the run that first published it had written its archive and the
    /// indexes naming it: a histogram, by `embargo` (`none`, or `expiry` for keys the expiry policy held back).
    static let publicationLatency = "en_distribution_publication_latency_seconds"
    /// Its buckets: from a quarter of an hour to two days (a key the expiry policy holds back waits about a day).
    static let publicationLatencyBuckets: [Double] = [
        900, 1800, 3600, 5400, 7200, 10_800, 14_400, 21_600, 43_200, 86_400, 129_600, 172_800,
    ]
}
