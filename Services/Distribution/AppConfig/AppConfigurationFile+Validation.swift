// What the decoder cannot check in the app-configuration file: ranges, enumerations, uniqueness, the TRL encoding.

import ENModels
import Foundation

/// The shared checks, by a shorter name.
private typealias Rules = AppConfigurationRules

extension AppConfigurationFile {
    /// Reads the file's JSON: the format version first, then everything else, then refuses keys it does not know.
    /// Every failure names its field.
    static func decode(_ data: Data) throws(AppConfigurationError) -> AppConfigurationFile {
        let decoder = JSONDecoder()
        let file: AppConfigurationFile
        do {
            let header = try decoder.decode(Header.self, from: data)
            guard header.formatVersion == Self.supportedFormatVersion else {
                throw AppConfigurationError(
                    field: "formatVersion",
                    problem: "must be \(Self.supportedFormatVersion), is \(header.formatVersion)"
                )
            }
            file = try decoder.decode(AppConfigurationFile.self, from: data)
        } catch let error as AppConfigurationError {
            throw error
        } catch let error as DecodingError {
            throw AppConfigurationError(error, in: data)
        } catch {
            throw AppConfigurationError(field: AppConfigurationError.root, problem: "cannot be decoded: \(error)")
        }
        try Self.refuseUnknownKeys(in: data, decoded: file)
        return file
    }

    /// Checks every value against what the apps and ENF accept; throws the first problem, in file order.
    func validate() throws(AppConfigurationError) {
        try self.validateVersions()
        try Self.validate(self.ios.exposureConfiguration, "ios.exposureConfiguration")
        try Self.validate(self.android.diagnosisKeysDataMapping, "android.diagnosisKeysDataMapping")
        try Self.validate(self.android.dailySummariesConfig, "android.dailySummariesConfig")
        try Self.validate(features: self.appFeatures, "appFeatures")
        try Self.validate(countries: self.supportedCountries, "supportedCountries")
        try Self.validate(self.keyDownload, "keyDownload")
        try Self.validate(self.exposureDetection, "exposureDetection")
        try Self.validate(self.riskCalculation, "riskCalculation")
        // The TRL the distribution hides in DSOS and report type must come back out on both platforms.
        try Self.validate(
            self.riskCalculation.trlEncoding,
            "riskCalculation.trlEncoding",
            infectiousness: self.ios.exposureConfiguration.infectiousnessForDaysSinceOnsetOfSymptoms,
            mappedAt: "ios.exposureConfiguration.infectiousnessForDaysSinceOnsetOfSymptoms"
        )
        try Self.validate(
            self.riskCalculation.trlEncoding,
            "riskCalculation.trlEncoding",
            infectiousness: self.android.diagnosisKeysDataMapping.daysSinceOnsetToInfectiousness,
            mappedAt: "android.diagnosisKeysDataMapping.daysSinceOnsetToInfectiousness"
        )
        try Self.validate(self.presenceTracing, "presenceTracing")
    }

    /// The keys of a validated JSON map as integers (keys that are not integers are left out; validation refuses them).
    static func integerKeyed<Value>(_ map: [String: Value]) -> [Int32: Value] {
        var result: [Int32: Value] = [:]
        for (key, value) in map {
            if let number = Int32(key) {
                result[number] = value
            }
        }
        return result
    }

    // MARK: - Platform parts

    private func validateVersions() throws(AppConfigurationError) {
        for (name, version) in [("minVersion", self.ios.minVersion), ("latestVersion", self.ios.latestVersion)] {
            try Rules.integer(version.major, in: Rules.nonNegative, "ios.\(name).major")
            try Rules.integer(version.minor, in: Rules.nonNegative, "ios.\(name).minor")
            try Rules.integer(version.patch, in: Rules.nonNegative, "ios.\(name).patch")
        }
        try Rules.require(
            !(self.ios.latestVersion < self.ios.minVersion),
            "ios.latestVersion",
            "\(self.ios.latestVersion) is below ios.minVersion \(self.ios.minVersion)"
        )
        try Rules.integer(self.android.minVersionCode, in: Rules.nonNegative, "android.minVersionCode")
        try Rules.integer(self.android.latestVersionCode, in: Rules.nonNegative, "android.latestVersionCode")
        try Rules.require(
            self.android.latestVersionCode >= self.android.minVersionCode,
            "android.latestVersionCode",
            "\(self.android.latestVersionCode) is below android.minVersionCode \(self.android.minVersionCode)"
        )
    }

    private static func validate(_ configuration: ExposureConfiguration, _ field: String) throws(AppConfigurationError)
    {
        try Rules.infectiousnessMap(
            configuration.infectiousnessForDaysSinceOnsetOfSymptoms,
            field + ".infectiousnessForDaysSinceOnsetOfSymptoms"
        )
        // ENDiagnosisReportType: 0 unknown, 1 confirmed test, 2 clinical diagnosis, 3 self-reported, 4 recursive.
        try Rules.integer(configuration.reportTypeNoneMap, in: 0...4, field + ".reportTypeNoneMap")
        try Rules.attenuationThresholds(
            configuration.attenuationDurationThresholds,
            field + ".attenuationDurationThresholds"
        )
        let weights: [(String, Double)] = [
            ("immediateDurationWeight", configuration.immediateDurationWeight),
            ("mediumDurationWeight", configuration.mediumDurationWeight),
            ("nearDurationWeight", configuration.nearDurationWeight),
            ("otherDurationWeight", configuration.otherDurationWeight),
            ("infectiousnessStandardWeight", configuration.infectiousnessStandardWeight),
            ("infectiousnessHighWeight", configuration.infectiousnessHighWeight),
            ("reportTypeConfirmedTestWeight", configuration.reportTypeConfirmedTestWeight),
            ("reportTypeConfirmedClinicalDiagnosisWeight", configuration.reportTypeConfirmedClinicalDiagnosisWeight),
            ("reportTypeSelfReportedWeight", configuration.reportTypeSelfReportedWeight),
            ("reportTypeRecursiveWeight", configuration.reportTypeRecursiveWeight),
        ]
        for (name, weight) in weights {
            try Rules.weight(weight, "\(field).\(name)")
        }
        try Rules.integer(
            configuration.daysSinceLastExposureThreshold,
            in: Rules.nonNegative,
            field + ".daysSinceLastExposureThreshold"
        )
    }

    private static func validate(_ mapping: DiagnosisKeysDataMapping, _ field: String) throws(AppConfigurationError) {
        try Rules.infectiousnessMap(mapping.daysSinceOnsetToInfectiousness, field + ".daysSinceOnsetToInfectiousness")
        // Google's Infectiousness: 0 none (such keys are ignored), 1 standard, 2 high.
        try Rules.integer(
            mapping.infectiousnessWhenDaysSinceOnsetMissing,
            in: 0...2,
            field + ".infectiousnessWhenDaysSinceOnsetMissing"
        )
        try Rules.integer(mapping.reportTypeWhenMissing, in: 1...4, field + ".reportTypeWhenMissing")
    }

    private static func validate(_ config: DailySummariesConfig, _ field: String) throws(AppConfigurationError) {
        try Rules.attenuationThresholds(config.attenuationBucketThresholdDb, field + ".attenuationBucketThresholdDb")
        // Three thresholds make four buckets, one weight each.
        try Rules.require(
            config.attenuationBucketWeights.count == 4,
            field + ".attenuationBucketWeights",
            "must hold 4 weights, holds \(config.attenuationBucketWeights.count)"
        )
        for (index, weight) in config.attenuationBucketWeights.enumerated() {
            try Rules.weight(weight, "\(field).attenuationBucketWeights[\(index)]")
        }
        try Rules.integer(
            config.daysSinceExposureThreshold,
            in: Rules.nonNegative,
            field + ".daysSinceExposureThreshold"
        )
        for entry in try Rules.integerKeys(
            config.infectiousnessWeights,
            in: 1...2,
            naming: "infectiousness",
            field + ".infectiousnessWeights"
        ) {
            try Rules.weight(entry.value, entry.field)
        }
        try Rules.weight(config.minimumWindowScore, field + ".minimumWindowScore")
        for entry in try Rules.integerKeys(
            config.reportTypeWeights,
            in: 1...4,
            naming: "report type",
            field + ".reportTypeWeights"
        ) {
            try Rules.weight(entry.value, entry.field)
        }
    }

    // MARK: - Shared parts

    private static func validate(features: [AppFeature], _ field: String) throws(AppConfigurationError) {
        var firstIndex: [String: Int] = [:]
        for (index, feature) in features.enumerated() {
            try Rules.nonBlank(feature.label, "\(field)[\(index)].label")
            if let earlier = firstIndex[feature.label] {
                throw AppConfigurationError(
                    field: "\(field)[\(index)].label",
                    problem: "'\(feature.label)' is already the label of \(field)[\(earlier)]"
                )
            }
            firstIndex[feature.label] = index
        }
    }

    private static func validate(countries: [String], _ field: String) throws(AppConfigurationError) {
        try Rules.nonEmpty(countries.count, field, holding: "country")
        var seen: Set<String> = []
        for (index, country) in countries.enumerated() {
            try Rules.require(
                CountryCode.isValid(country),
                "\(field)[\(index)]",
                "'\(country)' is not an ISO 3166 alpha-2 code in upper case"
            )
            try Rules.require(seen.insert(country).inserted, "\(field)[\(index)]", "'\(country)' is listed twice")
        }
    }

    private static func validate(_ download: KeyDownload, _ field: String) throws(AppConfigurationError) {
        let downloadTimeout = download.androidDownloadTimeoutInSeconds
        try Rules.integer(downloadTimeout, in: Rules.positive, field + ".androidDownloadTimeoutInSeconds")
        try Rules.integer(
            download.androidOverallTimeoutInSeconds,
            in: Rules.positive,
            field + ".androidOverallTimeoutInSeconds"
        )
        try Rules.require(
            download.androidOverallTimeoutInSeconds >= downloadTimeout,
            field + ".androidOverallTimeoutInSeconds",
            "must not be below androidDownloadTimeoutInSeconds (\(downloadTimeout))"
        )
        for (index, revoked) in download.revokedDayPackages.enumerated() {
            let revokedField = "\(field).revokedDayPackages[\(index)]"
            try Self.validatePackage(region: revoked.region, date: revoked.date, etag: revoked.etag, revokedField)
        }
        for (index, revoked) in download.revokedHourPackages.enumerated() {
            let revokedField = "\(field).revokedHourPackages[\(index)]"
            try Self.validatePackage(region: revoked.region, date: revoked.date, etag: revoked.etag, revokedField)
            try Rules.integer(revoked.hour, in: 0...23, revokedField + ".hour")
        }
        for (index, revoked) in download.revokedTraceWarningPackages.enumerated() {
            try Rules.nonBlank(revoked.etag, "\(field).revokedTraceWarningPackages[\(index)].etag")
        }
    }

    /// A revoked package names a country folder (or the EU package, `EUR`, cwa-server §3.3), a real day and an ETag.
    private static func validatePackage(
        region: String,
        date: String,
        etag: String,
        _ field: String
    ) throws(AppConfigurationError) {
        try Rules.require(
            region == "EUR" || CountryCode.isValid(region),
            field + ".region",
            "'\(region)' is neither an ISO 3166 alpha-2 code in upper case nor EUR"
        )
        try Rules.require(Self.isCalendarDate(date), field + ".date", "'\(date)' is not a date in the form yyyy-MM-dd")
        try Rules.nonBlank(etag, field + ".etag")
    }

    /// `yyyy-MM-dd` naming a day that exists in the Gregorian calendar.
    private static func isCalendarDate(_ text: String) -> Bool {
        WireTime.day(text) != nil
    }

    private static func validate(_ detection: ExposureDetection, _ field: String) throws(AppConfigurationError) {
        try Rules.integer(
            detection.maxExposureDetectionsPerInterval,
            in: Rules.positive,
            field + ".maxExposureDetectionsPerInterval"
        )
        try Rules.integer(
            detection.androidOverallTimeoutInSeconds,
            in: Rules.positive,
            field + ".androidOverallTimeoutInSeconds"
        )
    }
}
