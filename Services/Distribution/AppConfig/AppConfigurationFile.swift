// The versioned JSON file both v2 app configurations are built from (cwa-server §2.3, §4).

import Foundation

/// `Resources/app-config.json` as written: one source for the iOS and the Android v2 message. Field names follow
/// the proto fields; map keys are strings in JSON (DSOS, report type, infectiousness); enums are spelled by name.
/// Integers use the proto field's type and are read as `WholeNumber`s, so a value the message cannot carry fails
/// decoding at its path.
/// `AppConfigurationFile+Validation.swift` checks the values, `AppConfigurationMessages.swift` builds the messages.
struct AppConfigurationFile: Codable, Sendable {
    /// The only `formatVersion` this code reads; a file of another version is refused before anything else is read.
    static let supportedFormatVersion = 1

    /// Free text for the people who edit the file; not published.
    var comment: String?
    @WholeNumber var formatVersion: Int
    var ios: IOS
    var android: Android
    var appFeatures: [AppFeature]
    var supportedCountries: [String]
    var keyDownload: KeyDownload
    var exposureDetection: ExposureDetection
    var riskCalculation: RiskCalculation
    var presenceTracing: PresenceTracing

    /// Just the version, read before the rest so an old or new layout is reported as such, not as a missing key.
    struct Header: Decodable {
        @WholeNumber var formatVersion: Int
    }
}

// MARK: - Platform parts

extension AppConfigurationFile {
    /// What only the iOS message holds.
    struct IOS: Codable, Sendable {
        var minVersion: SemanticVersion
        var latestVersion: SemanticVersion
        var exposureConfiguration: ExposureConfiguration
    }

    /// An iOS release; negative parts are refused by validation.
    struct SemanticVersion: Codable, Sendable, Comparable, CustomStringConvertible {
        @WholeNumber var major: Int32
        @WholeNumber var minor: Int32
        @WholeNumber var patch: Int32

        var description: String { "\(self.major).\(self.minor).\(self.patch)" }

        /// Orders versions part by part.
        static func < (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
            (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
        }
    }

    /// Input for Apple's `ENExposureConfiguration` (ENF v2).
    struct ExposureConfiguration: Codable, Sendable {
        /// DSOS (as a string, -14…14) → infectiousness (1 standard, 2 high).
        @WholeNumberValues var infectiousnessForDaysSinceOnsetOfSymptoms: [String: Int32]
        /// The report type ENF assumes for a key without one (`ENDiagnosisReportType`, 0…4).
        @WholeNumber var reportTypeNoneMap: Int32
        /// Three ascending attenuation thresholds in dB.
        @WholeNumbers var attenuationDurationThresholds: [Int32]
        var immediateDurationWeight: Double
        var mediumDurationWeight: Double
        var nearDurationWeight: Double
        var otherDurationWeight: Double
        @WholeNumber var daysSinceLastExposureThreshold: Int32
        var infectiousnessStandardWeight: Double
        var infectiousnessHighWeight: Double
        var reportTypeConfirmedTestWeight: Double
        var reportTypeConfirmedClinicalDiagnosisWeight: Double
        var reportTypeSelfReportedWeight: Double
        var reportTypeRecursiveWeight: Double
    }

    /// What only the Android message holds.
    struct Android: Codable, Sendable {
        @WholeNumber var minVersionCode: Int64
        @WholeNumber var latestVersionCode: Int64
        var diagnosisKeysDataMapping: DiagnosisKeysDataMapping
        var dailySummariesConfig: DailySummariesConfig
    }

    /// Input for Google's `DiagnosisKeysDataMapping`.
    struct DiagnosisKeysDataMapping: Codable, Sendable {
        /// DSOS (as a string, -14…14) → infectiousness (1 standard, 2 high).
        @WholeNumberValues var daysSinceOnsetToInfectiousness: [String: Int32]
        /// 0 (none: the key is ignored), 1 or 2.
        @WholeNumber var infectiousnessWhenDaysSinceOnsetMissing: Int32
        /// ENF report type 1…4.
        @WholeNumber var reportTypeWhenMissing: Int32
    }

    /// Input for Google's `DailySummariesConfig`.
    struct DailySummariesConfig: Codable, Sendable {
        /// Three ascending thresholds in dB, splitting attenuations into the four buckets weighted below.
        @WholeNumbers var attenuationBucketThresholdDb: [Int32]
        var attenuationBucketWeights: [Double]
        @WholeNumber var daysSinceExposureThreshold: Int32
        /// Infectiousness (as a string, 1 or 2) → weight.
        var infectiousnessWeights: [String: Double]
        var minimumWindowScore: Double
        /// ENF report type (as a string, 1…4) → weight.
        var reportTypeWeights: [String: Double]
    }
}

// MARK: - Shared parts

extension AppConfigurationFile {
    /// A feature flag of both apps.
    struct AppFeature: Codable, Sendable {
        var label: String
        @WholeNumber var value: Int32
    }

    /// Package revocations for both platforms, timeouts for Android only.
    struct KeyDownload: Codable, Sendable {
        @WholeNumber var androidDownloadTimeoutInSeconds: Int32
        @WholeNumber var androidOverallTimeoutInSeconds: Int32
        var revokedDayPackages: [DayPackage]
        var revokedHourPackages: [HourPackage]
        var revokedTraceWarningPackages: [TraceWarningPackage]
    }

    /// A published day package the apps must drop, named by its ETag.
    struct DayPackage: Codable, Sendable {
        var region: String
        /// `yyyy-MM-dd`.
        var date: String
        var etag: String
    }

    /// A published hour package the apps must drop, named by its ETag.
    struct HourPackage: Codable, Sendable {
        var region: String
        /// `yyyy-MM-dd`.
        var date: String
        /// 0…23.
        @WholeNumber var hour: Int32
        var etag: String
    }

    /// A published trace-warning package the apps must drop.
    struct TraceWarningPackage: Codable, Sendable {
        var etag: String
    }

    /// How often the apps may match keys; the timeout is Android's only.
    struct ExposureDetection: Codable, Sendable {
        @WholeNumber var maxExposureDetectionsPerInterval: Int32
        @WholeNumber var androidOverallTimeoutInSeconds: Int32
    }
}

// MARK: - Risk calculation

extension AppConfigurationFile {
    /// The proto `Range` (named so it does not hide `Swift.Range`): a bound is closed unless marked exclusive, and
    /// an omitted flag means false.
    struct Interval: Codable, Sendable {
        var min: Double
        var minExclusive: Bool?
        var max: Double
        var maxExclusive: Bool?
    }

    /// All fields of the v2 `RiskCalculationParameters` except the deprecated `transmissionRiskLevelMultiplier`.
    struct RiskCalculation: Codable, Sendable {
        var minutesAtAttenuationFilters: [MinutesAtAttenuationFilter]
        var trlFilters: [TrlFilter]
        var minutesAtAttenuationWeights: [MinutesAtAttenuationWeight]
        var normalizedTimePerEWToRiskLevelMapping: [NormalizedTimeToRiskLevel]
        var normalizedTimePerDayToRiskLevelMapping: [NormalizedTimeToRiskLevel]
        var trlEncoding: TransmissionRiskLevelEncoding
        var transmissionRiskValueMapping: [TransmissionRiskValue]
        /// 1…14.
        @WholeNumber var maxEncounterAgeInDays: Int32
    }

    /// Exposure windows with this many minutes in this attenuation range are dropped.
    struct MinutesAtAttenuationFilter: Codable, Sendable {
        var attenuationRange: Interval
        var dropIfMinutesInRange: Interval
    }

    /// Exposure windows of keys with a TRL in this range are dropped.
    struct TrlFilter: Codable, Sendable {
        var dropIfTrlInRange: Interval
    }

    /// Minutes in this attenuation range count with this weight.
    struct MinutesAtAttenuationWeight: Codable, Sendable {
        var attenuationRange: Interval
        var weight: Double
    }

    /// Normalised time in this range means this risk level: `LOW` or `HIGH`.
    struct NormalizedTimeToRiskLevel: Codable, Sendable {
        var normalizedTimeRange: Interval
        var riskLevel: String
    }

    /// How the apps read back the TRL the distribution encodes in DSOS and report type (cwa-server §3.2):
    /// TRL = infectiousness offset + report-type offset.
    struct TransmissionRiskLevelEncoding: Codable, Sendable {
        @WholeNumber var infectiousnessOffsetStandard: Int32
        @WholeNumber var infectiousnessOffsetHigh: Int32
        @WholeNumber var reportTypeOffsetRecursive: Int32
        @WholeNumber var reportTypeOffsetSelfReport: Int32
        @WholeNumber var reportTypeOffsetConfirmedClinicalDiagnosis: Int32
        @WholeNumber var reportTypeOffsetConfirmedTest: Int32
    }

    /// The transmission risk value a TRL (1…8) stands for.
    struct TransmissionRiskValue: Codable, Sendable {
        @WholeNumber var transmissionRiskLevel: Int32
        var transmissionRiskValue: Double
    }
}
