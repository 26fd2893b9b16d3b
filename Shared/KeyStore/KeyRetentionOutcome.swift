// What a publication run's retention removed.

/// The rows retention removed from the `keys` database.
package struct KeyRetentionOutcome: Sendable, Equatable {
    package var keys = 0
    package var checkInReports = 0
    package var traceWarnings = 0
    /// Self-report statistics rows (`self_report_submissions`), kept longer than keys.
    package var selfReports = 0

    package init(keys: Int = 0, checkInReports: Int = 0, traceWarnings: Int = 0, selfReports: Int = 0) {
        self.keys = keys
        self.checkInReports = checkInReports
        self.traceWarnings = traceWarnings
        self.selfReports = selfReports
    }
}
