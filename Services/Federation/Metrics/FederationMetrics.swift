// federation-service's metrics, prefixed `en_federation_`. Labels are low-cardinality; no value names a key.

import Foundation
import Metrics

struct FederationMetrics: Sendable {
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// An uploaded batch by the gateway's answer: `created`, `partial`, `duplicate_tag`, `refused`.
    func recordUploadBatch(_ outcome: String) {
        Counter(label: "en_federation_upload_batches_total", dimensions: [("outcome", outcome)], factory: self.factory)
            .increment()
    }

    func recordUploadRun(_ outcome: UploadOutcome, at time: Date) {
        Counter(label: "en_federation_upload_keys_total", dimensions: [("outcome", "accepted")], factory: self.factory)
            .increment(by: outcome.keysAccepted)
        Counter(label: "en_federation_upload_keys_total", dimensions: [("outcome", "deferred")], factory: self.factory)
            .increment(by: outcome.keysDeferred)
        Gauge(label: "en_federation_upload_keys_waiting", factory: self.factory).record(outcome.keysWaiting)
        Gauge(label: "en_federation_upload_last_success_timestamp_seconds", factory: self.factory)
            .record(time.timeIntervalSince1970)
    }

    /// A downloaded batch by its new state (`processed`, `processed_with_error`, `error`, `error_wont_retry`).
    func recordDownloadBatch(_ status: String) {
        Counter(label: "en_federation_download_batches_total", dimensions: [("status", status)], factory: self.factory)
            .increment()
    }

    func recordKeysDownloaded(_ count: Int) {
        Counter(label: "en_federation_download_keys_total", dimensions: [("outcome", "stored")], factory: self.factory)
            .increment(by: count)
    }

    /// A downloaded key refused, by reason.
    func recordKeyRefused(_ reason: String) {
        Counter(
            label: "en_federation_download_keys_total",
            dimensions: [("outcome", "refused"), ("reason", reason)],
            factory: self.factory
        )
        .increment()
    }

    func recordDownloadRun(_ outcome: DownloadOutcome, at time: Date) {
        Gauge(label: "en_federation_download_last_success_timestamp_seconds", factory: self.factory)
            .record(time.timeIntervalSince1970)
    }

    /// A callback from the gateway: `accepted`, `refused` (certificate), `invalid` (parameters).
    func recordCallback(_ outcome: String) {
        Counter(label: "en_federation_callbacks_total", dimensions: [("outcome", outcome)], factory: self.factory)
            .increment()
    }
}
