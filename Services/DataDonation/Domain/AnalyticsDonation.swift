// An analytics donation (`dat`) as rows: its bounds checked (cwa-satellites §4.4), device-free, dated by day only.

import ENModels
import Foundation

/// The platform a request came from; stored with each row so analysts can tell the apps apart.
enum Platform: String, Sendable, Codable {
    case android, ios
}

/// The rows one donation adds, one array per table. Each row carries the submission date and, where the reference
/// keeps them, the donor's user metadata; nothing identifies the device or links two rows.
struct AnalyticsDonation: Sendable, Equatable {
    var risk: [RiskRow] = []
    var testResults: [TestResultRow] = []
    var keySubmissions: [KeySubmissionRow] = []
    var windows: [WindowRow] = []
    var client: [ClientRow] = []

    /// The bounds of §4.4.
    enum Bounds {
        static let riskMetadata = 0...1
        static let testResults = 0...2
        static let keySubmissions = 0...3
        /// New exposure windows, and those at test registration or until the result, per set.
        static let windows = 0...2688
        static let scanInstances = 1...15
        /// How many windows of one set are stored; the rest are dropped (§4.4).
        static let storedWindows = 672
    }

    /// The rows of `payload` (the sets both platforms share) and its client metadata, submitted on `day`; nil
    /// when a set is out of bounds or holds an enum value the protocol does not define.
    init?(
        platform: Platform,
        day: Date,
        risk: [PPAExposureRiskMetadata],
        windows: [PPANewExposureWindow],
        testResults: [PPATestResultMetadata],
        keySubmissions: [PPAKeySubmissionMetadata],
        user: PPAUserMetadata?,
        client: ClientRow?
    ) {
        guard Bounds.riskMetadata.contains(risk.count), Bounds.testResults.contains(testResults.count),
            Bounds.keySubmissions.contains(keySubmissions.count), Bounds.windows.contains(windows.count),
            testResults.allSatisfy({
                Bounds.windows.contains($0.exposureWindowsAtTestRegistration.count)
                    && Bounds.windows.contains($0.exposureWindowsUntilTestResult.count)
            })
        else { return nil }
        let submitted = DonationDate(day)
        let user = user.map(UserColumns.init)
        if let user, !user.isValid { return nil }
        do {
            self.risk = try risk.map { try RiskRow($0, platform: platform, submitted: submitted, user: user) }
            self.testResults = try testResults.map {
                try TestResultRow($0, platform: platform, submitted: submitted, user: user)
            }
            self.keySubmissions = try keySubmissions.map {
                try KeySubmissionRow($0, platform: platform, submitted: submitted, user: user)
            }
            // Every window is checked; only the first `storedWindows` of each set are kept (§4.4).
            var rows: [WindowRow] = []
            let new = try windows.map {
                try WindowRow($0, platform: platform, submitted: submitted, context: "new", result: nil)
            }
            rows += new.prefix(Bounds.storedWindows)
            for result in testResults {
                let value = result.testResult.rawValue
                for (context, set) in [
                    ("at_test_registration", result.exposureWindowsAtTestRegistration),
                    ("until_test_result", result.exposureWindowsUntilTestResult),
                ] {
                    let checked = try set.map {
                        try WindowRow($0, platform: platform, submitted: submitted, context: context, result: value)
                    }
                    rows += checked.prefix(Bounds.storedWindows)
                }
            }
            self.windows = rows
        } catch {
            return nil
        }
        self.client = client.map { [$0] } ?? []
    }
}

/// A value outside what the protocol defines.
struct OutOfRange: Error {}

/// `value` when it lies in `range`, else `OutOfRange`: unknown enum values are refused, not stored.
private func checked(_ value: Int, _ range: ClosedRange<Int>) throws(OutOfRange) -> Int {
    guard range.contains(value) else { throw OutOfRange() }
    return value
}

/// A calendar day as the tables store it (`yyyy-MM-dd`, UTC).
struct DonationDate: Sendable, Equatable, Codable {
    let text: String

    /// The Gregorian calendar in UTC, made once: a donation dates hundreds of rows.
    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    init(_ date: Date) {
        let parts = Self.utc.dateComponents([.year, .month, .day], from: date)
        self.text = String(format: "%04d-%02d-%02d", parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
    }

    /// The day of an epoch-seconds value the app sends (0: none).
    static func fromEpoch(_ seconds: Int64) -> DonationDate? {
        guard seconds > 0, seconds < 32_503_680_000 else { return nil }
        return DonationDate(Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.text)
    }

    init(from decoder: any Decoder) throws {
        self.text = try decoder.singleValueContainer().decode(String.self)
    }

    init(text: String) { self.text = text }
}

/// The donor's user metadata (§4.4): federal state 0–16, age group 0–3, a district id.
struct UserColumns: Sendable, Equatable {
    var federalState: Int
    var administrativeUnit: Int
    var ageGroup: Int

    init(_ metadata: PPAUserMetadata) {
        self.federalState = metadata.federalState.rawValue
        self.administrativeUnit = Int(metadata.administrativeUnit)
        self.ageGroup = metadata.ageGroup.rawValue
    }

    var isValid: Bool { (0...16).contains(self.federalState) && (0...3).contains(self.ageGroup) }
}

struct RiskRow: Sendable, Equatable, Encodable {
    var submittedAt: DonationDate
    var platform: Platform
    var riskLevel: Int
    var riskLevelChanged: Bool
    var mostRecentDateAtRiskLevel: DonationDate?
    var dateChanged: Bool
    var ptRiskLevel: Int
    var ptRiskLevelChanged: Bool
    var ptMostRecentDateAtRiskLevel: DonationDate?
    var ptDateChanged: Bool
    var federalState: Int?
    var administrativeUnit: Int?
    var ageGroup: Int?

    init(_ m: PPAExposureRiskMetadata, platform: Platform, submitted: DonationDate, user: UserColumns?) throws {
        self.submittedAt = submitted
        self.platform = platform
        self.riskLevel = try checked(m.riskLevel.rawValue, 0...3)
        self.riskLevelChanged = m.riskLevelChangedComparedToPreviousSubmission
        self.mostRecentDateAtRiskLevel = DonationDate.fromEpoch(m.mostRecentDateAtRiskLevel)
        self.dateChanged = m.dateChangedComparedToPreviousSubmission
        self.ptRiskLevel = try checked(m.ptRiskLevel.rawValue, 0...3)
        self.ptRiskLevelChanged = m.ptRiskLevelChangedComparedToPreviousSubmission
        self.ptMostRecentDateAtRiskLevel = DonationDate.fromEpoch(m.ptMostRecentDateAtRiskLevel)
        self.ptDateChanged = m.ptDateChangedComparedToPreviousSubmission
        self.federalState = user?.federalState
        self.administrativeUnit = user?.administrativeUnit
        self.ageGroup = user?.ageGroup
    }
}

struct TestResultRow: Sendable, Equatable, Encodable {
    var submittedAt: DonationDate
    var platform: Platform
    var testResult: Int
    var hoursSinceTestRegistration: Int32
    var riskLevelAtTestRegistration: Int
    var daysSinceMostRecentDateAtRiskLevel: Int32
    var hoursSinceHighRiskWarning: Int32
    var ptRiskLevelAtTestRegistration: Int
    var ptDaysSinceMostRecentDateAtRiskLevel: Int32
    var ptHoursSinceHighRiskWarning: Int32
    var federalState: Int?
    var administrativeUnit: Int?
    var ageGroup: Int?

    init(_ m: PPATestResultMetadata, platform: Platform, submitted: DonationDate, user: UserColumns?) throws {
        self.submittedAt = submitted
        self.platform = platform
        self.testResult = try checked(m.testResult.rawValue, 0...8)
        self.hoursSinceTestRegistration = m.hoursSinceTestRegistration
        self.riskLevelAtTestRegistration = try checked(m.riskLevelAtTestRegistration.rawValue, 0...3)
        self.daysSinceMostRecentDateAtRiskLevel = m.daysSinceMostRecentDateAtRiskLevelAtTestRegistration
        self.hoursSinceHighRiskWarning = m.hoursSinceHighRiskWarningAtTestRegistration
        self.ptRiskLevelAtTestRegistration = try checked(m.ptRiskLevelAtTestRegistration.rawValue, 0...3)
        self.ptDaysSinceMostRecentDateAtRiskLevel = m.ptDaysSinceMostRecentDateAtRiskLevelAtTestRegistration
        self.ptHoursSinceHighRiskWarning = m.ptHoursSinceHighRiskWarningAtTestRegistration
        self.federalState = user?.federalState
        self.administrativeUnit = user?.administrativeUnit
        self.ageGroup = user?.ageGroup
    }
}

struct KeySubmissionRow: Sendable, Equatable, Encodable {
    var submittedAt: DonationDate
    var platform: Platform
    var submitted: Bool
    var submittedInBackground: Bool
    var submittedAfterCancel: Bool
    var submittedAfterSymptomFlow: Bool
    var advancedConsentGiven: Bool
    var lastSubmissionFlowScreen: Int
    var hoursSinceTestResult: Int32
    var hoursSinceTestRegistration: Int32
    var daysSinceMostRecentDateAtRiskLevel: Int32
    var hoursSinceHighRiskWarning: Int32
    var submittedWithTeletan: Bool
    var submittedAfterRapidAntigenTest: Bool
    var ptDaysSinceMostRecentDateAtRiskLevel: Int32
    var ptHoursSinceHighRiskWarning: Int32
    var submittedWithCheckIns: Bool?
    var submissionType: Int
    var federalState: Int?
    var administrativeUnit: Int?
    var ageGroup: Int?

    init(_ m: PPAKeySubmissionMetadata, platform: Platform, submitted: DonationDate, user: UserColumns?) throws {
        self.submittedAt = submitted
        self.platform = platform
        self.submitted = m.submitted
        self.submittedInBackground = m.submittedInBackground
        self.submittedAfterCancel = m.submittedAfterCancel
        self.submittedAfterSymptomFlow = m.submittedAfterSymptomFlow
        self.advancedConsentGiven = m.advancedConsentGiven
        self.lastSubmissionFlowScreen = try checked(m.lastSubmissionFlowScreen.rawValue, 0...5)
        self.hoursSinceTestResult = m.hoursSinceTestResult
        self.hoursSinceTestRegistration = m.hoursSinceTestRegistration
        self.daysSinceMostRecentDateAtRiskLevel = m.daysSinceMostRecentDateAtRiskLevelAtTestRegistration
        self.hoursSinceHighRiskWarning = m.hoursSinceHighRiskWarningAtTestRegistration
        self.submittedWithTeletan = m.submittedWithTeleTan
        self.submittedAfterRapidAntigenTest = m.submittedAfterRapidAntigenTest
        self.ptDaysSinceMostRecentDateAtRiskLevel = m.ptDaysSinceMostRecentDateAtRiskLevelAtTestRegistration
        self.ptHoursSinceHighRiskWarning = m.ptHoursSinceHighRiskWarningAtTestRegistration
        switch try checked(m.submittedWithCheckIns.rawValue, 0...2) {
        case 1: self.submittedWithCheckIns = true
        case 2: self.submittedWithCheckIns = false
        default: self.submittedWithCheckIns = nil
        }
        self.submissionType = try checked(m.submissionType.rawValue, 0...7)
        self.federalState = user?.federalState
        self.administrativeUnit = user?.administrativeUnit
        self.ageGroup = user?.ageGroup
    }
}

struct WindowRow: Sendable, Equatable, Encodable {
    var submittedAt: DonationDate
    var platform: Platform
    var context: String
    var testResult: Int?
    var date: DonationDate?
    var reportType: Int
    var infectiousness: Int
    var calibrationConfidence: Int32
    var transmissionRiskLevel: Int32
    var normalizedTime: Double
    var typicalAttenuations: [Int32]
    var minAttenuations: [Int32]
    var secondsSinceLastScans: [Int32]

    init(
        _ w: PPANewExposureWindow,
        platform: Platform,
        submitted: DonationDate,
        context: String,
        result: Int?
    ) throws {
        let window = w.exposureWindow
        guard AnalyticsDonation.Bounds.scanInstances.contains(window.scanInstances.count), w.normalizedTime.isFinite
        else { throw OutOfRange() }
        self.submittedAt = submitted
        self.platform = platform
        self.context = context
        self.testResult = try result.map { try checked($0, 0...8) }
        self.date = DonationDate.fromEpoch(window.date)
        self.reportType = try checked(window.reportType.rawValue, 0...5)
        self.infectiousness = try checked(window.infectiousness.rawValue, 0...2)
        self.calibrationConfidence = window.calibrationConfidence
        self.transmissionRiskLevel = w.transmissionRiskLevel
        self.normalizedTime = w.normalizedTime
        self.typicalAttenuations = window.scanInstances.map(\.typicalAttenuation)
        self.minAttenuations = window.scanInstances.map(\.minAttenuation)
        self.secondsSinceLastScans = window.scanInstances.map(\.secondsSinceLastScan)
    }
}

struct ClientRow: Sendable, Equatable, Encodable {
    var submittedAt: DonationDate
    var platform: Platform
    var cwaVersion: String
    var osVersion: String?
    var androidApiLevel: Int64?
    var enfVersion: Int64?
    var appConfigEtag: String

    static func version(_ v: PPASemanticVersion) -> String { "\(v.major).\(v.minor).\(v.patch)" }

    init(android data: PPADataAndroid, submitted: Date) {
        let m = data.clientMetadata
        self.submittedAt = DonationDate(submitted)
        self.platform = .android
        self.cwaVersion = Self.version(m.cwaVersion)
        self.osVersion = nil
        self.androidApiLevel = m.androidApiLevel
        self.enfVersion = m.enfVersion
        self.appConfigEtag = String(m.appConfigEtag.prefix(100))
    }

    init(ios data: PPADataIOS, submitted: Date) {
        let m = data.clientMetadata
        self.submittedAt = DonationDate(submitted)
        self.platform = .ios
        self.cwaVersion = Self.version(m.cwaVersion)
        self.osVersion = Self.version(m.iosVersion)
        self.androidApiLevel = nil
        self.enfVersion = nil
        self.appConfigEtag = String(m.appConfigEtag.prefix(100))
    }
}

extension AnalyticsDonation {
    static func android(_ data: PPADataAndroid, day: Date) -> AnalyticsDonation? {
        AnalyticsDonation(
            platform: .android,
            day: day,
            risk: data.exposureRiskMetadataSet,
            windows: data.newExposureWindows,
            testResults: data.testResultMetadataSet,
            keySubmissions: data.keySubmissionMetadataSet,
            user: data.hasUserMetadata ? data.userMetadata : nil,
            client: data.hasClientMetadata ? ClientRow(android: data, submitted: day) : nil
        )
    }

    static func ios(_ data: PPADataIOS, day: Date) -> AnalyticsDonation? {
        AnalyticsDonation(
            platform: .ios,
            day: day,
            risk: data.exposureRiskMetadataSet,
            windows: data.newExposureWindows,
            testResults: data.testResultMetadataSet,
            keySubmissions: data.keySubmissionMetadataSet,
            user: data.hasUserMetadata ? data.userMetadata : nil,
            client: data.hasClientMetadata ? ClientRow(ios: data, submitted: day) : nil
        )
    }
}
