// What storing a submission did, or why it stored nothing.

/// What a submission stored.
package struct KeySubmissionOutcome: Sendable, Equatable {
    /// Key rows inserted (real and padding); fewer than given when a key exists already.
    package var keys = 0
    package var protectedReports = 0
    package var traceWarnings = 0
    /// Whether the check-ins were stored; false when their statements failed and were rolled back alone.
    package var checkInsStored = true

    package init(keys: Int = 0, protectedReports: Int = 0, traceWarnings: Int = 0, checkInsStored: Bool = true) {
        self.keys = keys
        self.protectedReports = protectedReports
        self.traceWarnings = traceWarnings
        self.checkInsStored = checkInsStored
    }
}

/// Why a self-report submission was refused before its authorisation ran (cwa-server §1.3, §1.4).
package enum SelfReportRefusal: Error, Equatable, Sendable {
    /// Today's keys (UTC, any type) reached `SelfReportLimits.maxKeysPerDay`.
    case dailyLimitReached
    /// A key's data is stored already, under any submission type.
    case keysExist
}
