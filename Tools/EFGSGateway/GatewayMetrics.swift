// The rehearsal gateway's metrics, prefixed `en_efgs_`.

import Metrics

struct GatewayMetrics: Sendable {
    let factory: any MetricsFactory

    func recordUpload(_ outcome: String, keys: Int) {
        Counter(label: "en_efgs_uploads_total", dimensions: [("outcome", outcome)], factory: self.factory).increment()
        Counter(label: "en_efgs_keys_uploaded_total", factory: self.factory).increment(by: keys)
    }

    /// An upload refused, by reason (`signature`, `validation`, `duplicate_tag`, …).
    func recordRefusal(_ reason: String) {
        Counter(label: "en_efgs_uploads_refused_total", dimensions: [("reason", reason)], factory: self.factory)
            .increment()
    }

    func recordDownload(keys: Int) {
        Counter(label: "en_efgs_downloads_total", factory: self.factory).increment()
        Counter(label: "en_efgs_keys_downloaded_total", factory: self.factory).increment(by: keys)
    }

    func recordBatches(_ count: Int) {
        Counter(label: "en_efgs_download_batches_total", factory: self.factory).increment(by: count)
    }

    /// A callback delivery: `delivered`, `failed`.
    func recordCallback(_ outcome: String) {
        Counter(label: "en_efgs_callbacks_total", dimensions: [("outcome", outcome)], factory: self.factory).increment()
    }
}
