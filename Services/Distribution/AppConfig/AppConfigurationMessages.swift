// Builds the v2 iOS and Android app-configuration messages from a validated file (cwa-server §2.3).

import ENModels
import Foundation

/// Turns a validated `AppConfigurationFile` into the two v2 messages. Integer conversions clamp, so nothing here can
/// trap; validation has already refused every value that would be clamped. The data-donation, corona-test, DGC and
/// self-report parameters are not in the file and stay unset.
enum AppConfigurationMessages {
    /// The iOS message: versions, features, countries, download and detection limits, risk, ENF v2, presence tracing.
    static func ios(from file: AppConfigurationFile) -> ApplicationConfigurationIOS {
        var message = ApplicationConfigurationIOS()
        message.minVersion = Self.semanticVersion(file.ios.minVersion)
        message.latestVersion = Self.semanticVersion(file.ios.latestVersion)
        message.appFeatures = Self.appFeatures(file.appFeatures)
        message.supportedCountries = file.supportedCountries
        var download = KeyDownloadParametersIOS()
        download.revokedDayPackages = file.keyDownload.revokedDayPackages.map(Self.dayPackage)
        download.revokedHourPackages = file.keyDownload.revokedHourPackages.map(Self.hourPackage)
        download.revokedTraceWarningPackages = file.keyDownload.revokedTraceWarningPackages.map(
            Self.traceWarningPackage
        )
        message.keyDownloadParameters = download
        var detection = ExposureDetectionParametersIOS()
        detection.maxExposureDetectionsPerInterval = file.exposureDetection.maxExposureDetectionsPerInterval
        message.exposureDetectionParameters = detection
        message.riskCalculationParameters = Self.riskCalculation(file.riskCalculation)
        message.exposureConfiguration = Self.exposureConfiguration(file.ios.exposureConfiguration)
        message.presenceTracingParameters = Self.presenceTracing(file.presenceTracing)
        return message
    }

    /// The Android message: the same as iOS, with version codes, timeouts and Google's mapping and summary configs.
    static func android(from file: AppConfigurationFile) -> ApplicationConfigurationAndroid {
        var message = ApplicationConfigurationAndroid()
        message.minVersionCode = file.android.minVersionCode
        message.latestVersionCode = file.android.latestVersionCode
        message.appFeatures = Self.appFeatures(file.appFeatures)
        message.supportedCountries = file.supportedCountries
        var download = KeyDownloadParametersAndroid()
        download.revokedDayPackages = file.keyDownload.revokedDayPackages.map(Self.dayPackage)
        download.revokedHourPackages = file.keyDownload.revokedHourPackages.map(Self.hourPackage)
        download.downloadTimeoutInSeconds = file.keyDownload.androidDownloadTimeoutInSeconds
        download.overallTimeoutInSeconds = file.keyDownload.androidOverallTimeoutInSeconds
        download.revokedTraceWarningPackages = file.keyDownload.revokedTraceWarningPackages.map(
            Self.traceWarningPackage
        )
        message.keyDownloadParameters = download
        var detection = ExposureDetectionParametersAndroid()
        detection.maxExposureDetectionsPerInterval = file.exposureDetection.maxExposureDetectionsPerInterval
        detection.overallTimeoutInSeconds = file.exposureDetection.androidOverallTimeoutInSeconds
        message.exposureDetectionParameters = detection
        message.riskCalculationParameters = Self.riskCalculation(file.riskCalculation)
        message.diagnosisKeysDataMapping = Self.diagnosisKeysDataMapping(file.android.diagnosisKeysDataMapping)
        message.dailySummariesConfig = Self.dailySummariesConfig(file.android.dailySummariesConfig)
        message.presenceTracingParameters = Self.presenceTracing(file.presenceTracing)
        return message
    }

    // MARK: - Enumerations by name (validation asks these too, so the names live in one place)

    static func riskLevel(named name: String) -> NormalizedTimeToRiskLevelMapping.RiskLevel? {
        switch name {
        case "LOW": return .low
        case "HIGH": return .high
        default: return nil
        }
    }

    static func errorCorrectionLevel(named name: String) -> PresenceTracingParameters.QRCodeErrorCorrectionLevel? {
        switch name {
        case "MEDIUM": return .medium
        case "LOW": return .low
        case "QUANTILE": return .quantile
        case "HIGH": return .high
        default: return nil
        }
    }

    static func payloadEncoding(named name: String) -> PresenceTracingQRCodeDescriptor.PayloadEncoding? {
        switch name {
        case "BASE32": return .base32
        case "BASE64": return .base64
        default: return nil
        }
    }

    // MARK: - Platform parts

    private static func semanticVersion(_ version: AppConfigurationFile.SemanticVersion) -> SemanticVersion {
        var message = SemanticVersion()
        message.major = UInt32(clamping: version.major)
        message.minor = UInt32(clamping: version.minor)
        message.patch = UInt32(clamping: version.patch)
        return message
    }

    private static func exposureConfiguration(
        _ configuration: AppConfigurationFile.ExposureConfiguration
    ) -> ExposureConfiguration {
        var message = ExposureConfiguration()
        message.infectiousnessForDaysSinceOnsetOfSymptoms = AppConfigurationFile.integerKeyed(
            configuration.infectiousnessForDaysSinceOnsetOfSymptoms
        )
        message.reportTypeNoneMap = configuration.reportTypeNoneMap
        message.attenuationDurationThresholds = configuration.attenuationDurationThresholds
        message.immediateDurationWeight = configuration.immediateDurationWeight
        message.mediumDurationWeight = configuration.mediumDurationWeight
        message.nearDurationWeight = configuration.nearDurationWeight
        message.otherDurationWeight = configuration.otherDurationWeight
        message.daysSinceLastExposureThreshold = configuration.daysSinceLastExposureThreshold
        message.infectiousnessStandardWeight = configuration.infectiousnessStandardWeight
        message.infectiousnessHighWeight = configuration.infectiousnessHighWeight
        message.reportTypeConfirmedTestWeight = configuration.reportTypeConfirmedTestWeight
        message.reportTypeConfirmedClinicalDiagnosisWeight = configuration.reportTypeConfirmedClinicalDiagnosisWeight
        message.reportTypeSelfReportedWeight = configuration.reportTypeSelfReportedWeight
        message.reportTypeRecursiveWeight = configuration.reportTypeRecursiveWeight
        return message
    }

    private static func diagnosisKeysDataMapping(
        _ mapping: AppConfigurationFile.DiagnosisKeysDataMapping
    ) -> DiagnosisKeysDataMapping {
        var message = DiagnosisKeysDataMapping()
        message.daysSinceOnsetToInfectiousness = AppConfigurationFile.integerKeyed(
            mapping.daysSinceOnsetToInfectiousness
        )
        message.infectiousnessWhenDaysSinceOnsetMissing = mapping.infectiousnessWhenDaysSinceOnsetMissing
        message.reportTypeWhenMissing = mapping.reportTypeWhenMissing
        return message
    }

    private static func dailySummariesConfig(
        _ config: AppConfigurationFile.DailySummariesConfig
    ) -> DailySummariesConfig {
        var message = DailySummariesConfig()
        message.attenuationBucketThresholdDb = config.attenuationBucketThresholdDb
        message.attenuationBucketWeights = config.attenuationBucketWeights
        message.daysSinceExposureThreshold = config.daysSinceExposureThreshold
        message.infectiousnessWeights = AppConfigurationFile.integerKeyed(config.infectiousnessWeights)
        message.minimumWindowScore = config.minimumWindowScore
        message.reportTypeWeights = AppConfigurationFile.integerKeyed(config.reportTypeWeights)
        return message
    }

    // MARK: - Shared parts

    private static func appFeatures(_ features: [AppConfigurationFile.AppFeature]) -> AppFeatures {
        var message = AppFeatures()
        message.appFeatures = features.map { feature in
            var flag = AppFeature()
            flag.label = feature.label
            flag.value = feature.value
            return flag
        }
        return message
    }

    private static func dayPackage(_ revoked: AppConfigurationFile.DayPackage) -> DayPackageMetadata {
        var message = DayPackageMetadata()
        message.region = revoked.region
        message.date = revoked.date
        message.etag = revoked.etag
        return message
    }

    private static func hourPackage(_ revoked: AppConfigurationFile.HourPackage) -> HourPackageMetadata {
        var message = HourPackageMetadata()
        message.region = revoked.region
        message.date = revoked.date
        message.hour = revoked.hour
        message.etag = revoked.etag
        return message
    }

    private static func traceWarningPackage(
        _ revoked: AppConfigurationFile.TraceWarningPackage
    ) -> TraceWarningPackageMetadata {
        var message = TraceWarningPackageMetadata()
        message.etag = revoked.etag
        return message
    }

    // MARK: - Risk calculation

    /// The proto `Range`; an omitted exclusivity flag is false.
    static func range(_ interval: AppConfigurationFile.Interval) -> ParameterRange {
        var message = ParameterRange()
        message.min = interval.min
        message.minExclusive = interval.minExclusive ?? false
        message.max = interval.max
        message.maxExclusive = interval.maxExclusive ?? false
        return message
    }

    private static func riskCalculation(_ risk: AppConfigurationFile.RiskCalculation) -> RiskCalculationParameters {
        var message = RiskCalculationParameters()
        message.minutesAtAttenuationFilters = risk.minutesAtAttenuationFilters.map { filter in
            var entry = MinutesAtAttenuationFilter()
            entry.attenuationRange = Self.range(filter.attenuationRange)
            entry.dropIfMinutesInRange = Self.range(filter.dropIfMinutesInRange)
            return entry
        }
        message.trlFilters = risk.trlFilters.map { filter in
            var entry = TrlFilter()
            entry.dropIfTrlInRange = Self.range(filter.dropIfTrlInRange)
            return entry
        }
        message.minutesAtAttenuationWeights = risk.minutesAtAttenuationWeights.map { weight in
            var entry = MinutesAtAttenuationWeight()
            entry.attenuationRange = Self.range(weight.attenuationRange)
            entry.weight = weight.weight
            return entry
        }
        message.normalizedTimePerEwtoRiskLevelMapping = risk.normalizedTimePerEWToRiskLevelMapping.map(
            Self.riskLevelMapping
        )
        message.normalizedTimePerDayToRiskLevelMapping = risk.normalizedTimePerDayToRiskLevelMapping.map(
            Self.riskLevelMapping
        )
        var encoding = TransmissionRiskLevelEncoding()
        encoding.infectiousnessOffsetStandard = risk.trlEncoding.infectiousnessOffsetStandard
        encoding.infectiousnessOffsetHigh = risk.trlEncoding.infectiousnessOffsetHigh
        encoding.reportTypeOffsetRecursive = risk.trlEncoding.reportTypeOffsetRecursive
        encoding.reportTypeOffsetSelfReport = risk.trlEncoding.reportTypeOffsetSelfReport
        encoding.reportTypeOffsetConfirmedClinicalDiagnosis =
            risk.trlEncoding.reportTypeOffsetConfirmedClinicalDiagnosis
        encoding.reportTypeOffsetConfirmedTest = risk.trlEncoding.reportTypeOffsetConfirmedTest
        message.trlEncoding = encoding
        message.transmissionRiskValueMapping = risk.transmissionRiskValueMapping.map(Self.transmissionRiskValue)
        message.maxEncounterAgeInDays = UInt32(clamping: risk.maxEncounterAgeInDays)
        return message
    }

    /// A normalised-time range and its risk level.
    static func riskLevelMapping(
        _ mapping: AppConfigurationFile.NormalizedTimeToRiskLevel
    ) -> NormalizedTimeToRiskLevelMapping {
        var message = NormalizedTimeToRiskLevelMapping()
        message.normalizedTimeRange = Self.range(mapping.normalizedTimeRange)
        message.riskLevel = Self.riskLevel(named: mapping.riskLevel) ?? .unspecified
        return message
    }

    /// One TRL and its transmission risk value.
    static func transmissionRiskValue(
        _ value: AppConfigurationFile.TransmissionRiskValue
    ) -> TransmissionRiskValueMapping {
        var message = TransmissionRiskValueMapping()
        message.transmissionRiskLevel = value.transmissionRiskLevel
        message.transmissionRiskValue = value.transmissionRiskValue
        return message
    }
}
