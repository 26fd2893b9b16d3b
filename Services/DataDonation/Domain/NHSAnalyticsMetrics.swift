// The counters of the NHS app's daily analytics packet (nhs §10).

/// The counters of the daily packet (the reference's `AnalyticsMetrics`, 6 + 14 + 49 names).
enum NHSAnalyticsMetrics {
    /// Nullable 64-bit byte counts.
    static let byteCounts = [
        "cumulativeDownloadBytes", "cumulativeUploadBytes", "cumulativeCellularDownloadBytes",
        "cumulativeCellularUploadBytes", "cumulativeWifiDownloadBytes", "cumulativeWifiUploadBytes",
    ]
    /// 32-bit counts that are 0 when missing and refused when `null`.
    static let requiredCounts = [
        "checkedIn", "canceledCheckIn", "receivedVoidTestResult", "isIsolatingBackgroundTick",
        "hasHadRiskyContactBackgroundTick", "receivedPositiveTestResult", "receivedNegativeTestResult",
        "hasSelfDiagnosedPositiveBackgroundTick", "completedQuestionnaireAndStartedIsolation",
        "encounterDetectionPausedBackgroundTick", "completedQuestionnaireButDidNotStartIsolation",
        "totalBackgroundTasks", "runningNormallyBackgroundTick", "completedOnboarding",
    ]
    /// Nullable 32-bit counts.
    static let optionalCounts = [
        "receivedVoidTestResultEnteredManually", "receivedPositiveTestResultEnteredManually",
        "receivedNegativeTestResultEnteredManually", "receivedVoidTestResultViaPolling",
        "receivedPositiveTestResultViaPolling", "receivedNegativeTestResultViaPolling",
        "hasSelfDiagnosedBackgroundTick", "hasTestedPositiveBackgroundTick",
        "isIsolatingForSelfDiagnosedBackgroundTick", "isIsolatingForTestedPositiveBackgroundTick",
        "isIsolatingForHadRiskyContactBackgroundTick", "receivedRiskyContactNotification", "startedIsolation",
        "receivedPositiveTestResultWhenIsolatingDueToRiskyContact", "receivedActiveIpcToken",
        "haveActiveIpcTokenBackgroundTick", "selectedIsolationPaymentsButton",
        "launchedIsolationPaymentsApplication", "receivedPositiveLFDTestResultViaPolling",
        "receivedNegativeLFDTestResultViaPolling", "receivedVoidLFDTestResultViaPolling",
        "receivedPositiveLFDTestResultEnteredManually", "receivedNegativeLFDTestResultEnteredManually",
        "receivedVoidLFDTestResultEnteredManually", "hasTestedLFDPositiveBackgroundTick",
        "isIsolatingForTestedLFDPositiveBackgroundTick", "totalExposureWindowsNotConsideredRisky",
        "totalExposureWindowsConsideredRisky", "acknowledgedStartOfIsolationDueToRiskyContact",
        "hasRiskyContactNotificationsEnabledBackgroundTick", "totalRiskyContactReminderNotifications",
        "receivedUnconfirmedPositiveTestResult", "isIsolatingForUnconfirmedTestBackgroundTick",
        "launchedTestOrdering", "didHaveSymptomsBeforeReceivedTestResult",
        "didRememberOnsetSymptomsDateBeforeReceivedTestResult", "didAskForSymptomsOnPositiveTestEntry",
        "declaredNegativeResultFromDCT", "receivedPositiveSelfRapidTestResultViaPolling",
        "receivedNegativeSelfRapidTestResultViaPolling", "receivedVoidSelfRapidTestResultViaPolling",
        "receivedPositiveSelfRapidTestResultEnteredManually", "receivedNegativeSelfRapidTestResultEnteredManually",
        "receivedVoidSelfRapidTestResultEnteredManually", "isIsolatingForTestedSelfRapidPositiveBackgroundTick",
        "hasTestedSelfRapidPositiveBackgroundTick", "receivedRiskyVenueM1Warning", "receivedRiskyVenueM2Warning",
        "hasReceivedRiskyVenueM2WarningBackgroundTick",
    ]

    static let all = Self.byteCounts + Self.requiredCounts + Self.optionalCounts
    /// Lookups of every packet, made once.
    static let required = Set(Self.requiredCounts)
    static let bytes = Set(Self.byteCounts)
}
