// When results are masked and deleted (cwa-satellites §2.4).

import ENServiceKit
import Foundation

/// Results are masked as redeemed `maskAfter` their creation and deleted `deleteAfter` it; the job runs `interval`
/// after each pass ends, on one replica at a time.
struct RetentionPolicy: Sendable, Equatable {
    var maskAfter: Duration
    var deleteAfter: Duration
    var interval: Duration

    init(
        maskAfter: Duration = .seconds(21 * 86400),
        deleteAfter: Duration = .seconds(60 * 86400),
        interval: Duration = .seconds(3600)
    ) {
        self.maskAfter = maskAfter
        self.deleteAfter = deleteAfter
        self.interval = interval
    }

    init(settings: SettingsReader) {
        let defaults = RetentionPolicy()
        // The reference configures 60 days for deletion; its docs say 90 (cwa-satellites §2.4, §7). We keep 60.
        self.maskAfter = settings.duration(
            "RESULT_MASK_AFTER",
            default: defaults.maskAfter,
            help: "Age after which a result reads as redeemed."
        )
        self.deleteAfter = settings.duration(
            "RESULT_DELETE_AFTER",
            default: defaults.deleteAfter,
            help: "Age after which a result is deleted."
        )
        self.interval = settings.duration(
            "RETENTION_INTERVAL",
            default: defaults.interval,
            minimum: .seconds(1),
            help: "How often masking and deletion run."
        )
        if self.deleteAfter <= self.maskAfter {
            settings.report("RESULT_DELETE_AFTER", "must be longer than RESULT_MASK_AFTER")
        }
    }

    /// Rows created before this instant are masked.
    func maskCutoff(now: Date) -> Date { now.addingTimeInterval(-self.maskAfter.timeInterval) }
    /// Rows created before this instant are deleted.
    func deleteCutoff(now: Date) -> Date { now.addingTimeInterval(-self.deleteAfter.timeInterval) }
}
