// Which pending keys go to the gateway, and in which batches (cwa-server §5.2).

import ENFederation
import ENModels
import ENServiceKit
import Foundation

/// The upload rules: expiry policy, retention, batch sizes.
struct UploadPolicy: Sendable, Equatable {
    /// A key goes out at least this long after it expired, as it is published at home (cwa-server §3.4).
    var expiryPolicyMinutes = 120
    /// Keys whose rolling start is older than this many days are not sent.
    var retentionDays = 14
    /// Fewer waiting keys than this are not sent yet (the reference's `min-batch-key-count`).
    var minimumKeys = 140
    /// At most this many keys in one batch (`max-batch-key-count`).
    var maximumKeys = 4000
    /// Batches in flight at once (the reference sends one after another).
    var parallelism = 4

    init() {}

    /// Reads `FEDERATION_UPLOAD_MIN_KEYS`, `FEDERATION_UPLOAD_MAX_KEYS`, `FEDERATION_UPLOAD_PARALLELISM`,
    /// `FEDERATION_EXPIRY_POLICY_MINUTES`, `FEDERATION_RETENTION_DAYS`.
    init(settings: SettingsReader) {
        let defaults = UploadPolicy()
        self.minimumKeys = settings.int(
            "FEDERATION_UPLOAD_MIN_KEYS",
            default: defaults.minimumKeys,
            range: 1...4000,
            help: "Fewer waiting keys are not uploaded yet (140; lower it only for demonstrations)."
        )
        self.maximumKeys = settings.int(
            "FEDERATION_UPLOAD_MAX_KEYS",
            default: defaults.maximumKeys,
            range: 1...5000,
            help: "Most keys in one upload batch."
        )
        if self.maximumKeys < self.minimumKeys {
            settings.report("FEDERATION_UPLOAD_MAX_KEYS", "must not be below FEDERATION_UPLOAD_MIN_KEYS")
        }
        self.parallelism = settings.int(
            "FEDERATION_UPLOAD_PARALLELISM",
            default: defaults.parallelism,
            range: 1...16,
            help: "Batches sent to the gateway at once; each is marked as soon as its answer is in."
        )
        self.expiryPolicyMinutes = settings.int(
            "FEDERATION_EXPIRY_POLICY_MINUTES",
            default: defaults.expiryPolicyMinutes,
            range: 0...1440,
            help: "A key is uploaded at least this long after it expired."
        )
        self.retentionDays = settings.int(
            "FEDERATION_RETENTION_DAYS",
            default: defaults.retentionDays,
            range: 1...14,
            help: "Keys whose rolling start is older are not uploaded."
        )
    }

    /// Whether `key` may leave at `now`: it expired at least the expiry policy ago (or was submitted later than that
    /// after its expiry), and its rolling start is within the retention.
    func isUploadable(_ key: UploadKey, now: Date) -> Bool {
        let expiry = (Int64(key.rollingStartIntervalNumber) + Int64(key.rollingPeriod)) * 600
        let submitted = key.submissionHour * 3600
        let policy = Int64(self.expiryPolicyMinutes) * 60
        let earliest = submitted - expiry <= policy ? (expiry + policy + 3600) / 3600 * 3600 : submitted
        let midnight = Int64(Calendar.utc.startOfDay(for: now).timeIntervalSince1970)
        let oldestStart = (midnight - Int64(self.retentionDays) * 86_400) / 600
        return earliest <= Int64(now.timeIntervalSince1970) && Int64(key.rollingStartIntervalNumber) >= oldestStart
    }

    /// The uploadable keys in batches: none when fewer than the minimum; otherwise as few batches as the maximum
    /// allows, of equal size (±1), so no remainder is left below the minimum. Keys are sorted by key data, which hides
    /// the order of submission.
    func batches(of keys: [UploadKey]) -> [[UploadKey]] {
        guard keys.count >= self.minimumKeys, !keys.isEmpty else { return [] }
        let sorted = keys.sorted { $0.keyData.lexicographicallyPrecedes($1.keyData) }
        let count = (sorted.count + self.maximumKeys - 1) / self.maximumKeys
        let size = sorted.count / count
        let larger = sorted.count % count
        var batches: [[UploadKey]] = []
        var start = 0
        for index in 0..<count {
            let end = start + size + (index < larger ? 1 : 0)
            batches.append(Array(sorted[start..<end]))
            start = end
        }
        return batches
    }
}
