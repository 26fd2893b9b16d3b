// The app-configuration file: the bundled one builds the expected v2 messages, and every kind of bad file is refused
// with an error naming the exact field.

import ENModels
import Foundation
import SwiftProtobuf
import Testing

@testable import DistributionService

@Suite("App configuration")
struct AppConfigurationTests {
    /// One change to the bundled JSON and the field the error must name.
    struct Mutation: Sendable, CustomTestStringConvertible {
        /// Keys and array indices separated by dots, as in `riskCalculation.trlFilters.0.dropIfTrlInRange`.
        let path: String
        /// The new value as a JSON fragment; nil removes the key.
        let json: String?
        let field: String
        var testDescription: String { "\(self.path) = \(self.json ?? "(removed)")" }
    }

    static let semanticMutations: [Mutation] = [
        Mutation(path: "formatVersion", json: "2", field: "formatVersion"),
        Mutation(
            path: "riskCalculation.minutesAtAttenuationWeights.2.attenuationRange.min",
            json: "80",
            field: "riskCalculation.minutesAtAttenuationWeights[2].attenuationRange"
        ),
        Mutation(
            path: "riskCalculation.minutesAtAttenuationWeights.1.weight",
            json: "-0.5",
            field: "riskCalculation.minutesAtAttenuationWeights[1].weight"
        ),
        Mutation(
            path: "riskCalculation.transmissionRiskValueMapping.3.transmissionRiskLevel",
            json: "9",
            field: "riskCalculation.transmissionRiskValueMapping[3].transmissionRiskLevel"
        ),
        Mutation(
            path: "riskCalculation.transmissionRiskValueMapping.4.transmissionRiskLevel",
            json: "4",
            field: "riskCalculation.transmissionRiskValueMapping[4].transmissionRiskLevel"
        ),
        Mutation(
            path: "riskCalculation.normalizedTimePerDayToRiskLevelMapping.1.riskLevel",
            json: #""VERY_HIGH""#,
            field: "riskCalculation.normalizedTimePerDayToRiskLevelMapping[1].riskLevel"
        ),
        Mutation(
            path: "riskCalculation.maxEncounterAgeInDays",
            json: "15",
            field: "riskCalculation.maxEncounterAgeInDays"
        ),
        // Self-report offset 1 would make the apps read TRL 3 (DSOS 1, SELF_REPORT) as 2.
        Mutation(
            path: "riskCalculation.trlEncoding.reportTypeOffsetSelfReport",
            json: "1",
            field: "riskCalculation.trlEncoding"
        ),
        Mutation(
            path: "android.dailySummariesConfig.attenuationBucketThresholdDb",
            json: "[30, 70, 50]",
            field: "android.dailySummariesConfig.attenuationBucketThresholdDb[2]"
        ),
        Mutation(
            path: "android.dailySummariesConfig.attenuationBucketWeights",
            json: "[1, 1, 1]",
            field: "android.dailySummariesConfig.attenuationBucketWeights"
        ),
        Mutation(
            path: "android.diagnosisKeysDataMapping.daysSinceOnsetToInfectiousness.2",
            json: "3",
            field: #"android.diagnosisKeysDataMapping.daysSinceOnsetToInfectiousness["2"]"#
        ),
        Mutation(
            path: "ios.exposureConfiguration.infectiousnessForDaysSinceOnsetOfSymptoms.15",
            json: "1",
            field: #"ios.exposureConfiguration.infectiousnessForDaysSinceOnsetOfSymptoms["15"]"#
        ),
        Mutation(
            path: "android.diagnosisKeysDataMapping.reportTypeWhenMissing",
            json: "0",
            field: "android.diagnosisKeysDataMapping.reportTypeWhenMissing"
        ),
        Mutation(path: "ios.minVersion.major", json: "-1", field: "ios.minVersion.major"),
        Mutation(path: "supportedCountries.1", json: #""de""#, field: "supportedCountries[1]"),
        Mutation(path: "supportedCountries.1", json: #""AT""#, field: "supportedCountries[1]"),
        Mutation(path: "appFeatures.1.label", json: #""unencrypted-checkins-enabled""#, field: "appFeatures[1].label"),
        Mutation(path: "appFeatures.0.label", json: #""  ""#, field: "appFeatures[0].label"),
        Mutation(
            path: "keyDownload.androidDownloadTimeoutInSeconds",
            json: "0",
            field: "keyDownload.androidDownloadTimeoutInSeconds"
        ),
        Mutation(
            path: "keyDownload.revokedHourPackages",
            json: #"[{"region": "DE", "date": "2020-02-30", "hour": 1, "etag": "\"abc\""}]"#,
            field: "keyDownload.revokedHourPackages[0].date"
        ),
        Mutation(
            path: "presenceTracing.plausibleDeniabilityParameters.probabilityToFakeCheckInsIfSomeCheckIns",
            json: "1.5",
            field: "presenceTracing.plausibleDeniabilityParameters.probabilityToFakeCheckInsIfSomeCheckIns"
        ),
        Mutation(
            path: "presenceTracing.qrCodeErrorCorrectionLevel",
            json: #""ULTRA""#,
            field: "presenceTracing.qrCodeErrorCorrectionLevel"
        ),
        Mutation(
            path: "presenceTracing.qrCodeDescriptors.0.regexPattern",
            json: #""https://e\\.coronawarn\\.app/(.+)""#,
            field: "presenceTracing.qrCodeDescriptors[0].regexPattern"
        ),
    ]

    static let decodingMutations: [Mutation] = [
        Mutation(path: "riskCalculation.trlEncoding", json: nil, field: "riskCalculation.trlEncoding"),
        Mutation(
            path: "android.diagnosisKeysDataMapping.reportTypeWhenMissing",
            json: nil,
            field: "android.diagnosisKeysDataMapping.reportTypeWhenMissing"
        ),
        Mutation(
            path: "riskCalculation.minutesAtAttenuationWeights.0.weight",
            json: #""heavy""#,
            field: "riskCalculation.minutesAtAttenuationWeights[0].weight"
        ),
        Mutation(path: "ios.minVersion", json: #""1.5.3""#, field: "ios.minVersion"),
        Mutation(path: "supportedCountries", json: "null", field: "supportedCountries"),
        Mutation(
            path: "riskCalculation.minutesAtAttenuationWeights.0.attenuationRange.maxExclusve",
            json: "true",
            field: "riskCalculation.minutesAtAttenuationWeights[0].attenuationRange.maxExclusve"
        ),
        Mutation(path: "keyDownload.revokedDayPackage", json: "[]", field: "keyDownload.revokedDayPackage"),
        // Foundation's JSONDecoder on Linux would report these two at the root; the file model names the field.
        Mutation(
            path: "ios.exposureConfiguration.attenuationDurationThresholds.1",
            json: "50.5",
            field: "ios.exposureConfiguration.attenuationDurationThresholds[1]"
        ),
        Mutation(
            path: "android.dailySummariesConfig.daysSinceExposureThreshold",
            json: "3000000000",
            field: "android.dailySummariesConfig.daysSinceExposureThreshold"
        ),
    ]

    // MARK: - Helpers

    static func bundledData() throws -> Data {
        try Data(contentsOf: AppConfiguration.bundledFileURL)
    }

    /// The bundled JSON with `mutation` applied, re-serialised.
    static func data(applying mutation: Mutation) throws -> Data {
        let document = try JSONSerialization.jsonObject(with: Self.bundledData())
        let value = try mutation.json.map {
            try JSONSerialization.jsonObject(with: Data($0.utf8), options: .fragmentsAllowed)
        }
        let changed = try Self.replacing(mutation.path.split(separator: ".")[...], in: document, with: value)
        return try JSONSerialization.data(withJSONObject: changed)
    }

    /// Thrown when a mutation's path does not exist in the bundled file (a broken test, not a broken file).
    struct MissingPath: Error {
        let component: String
    }

    private static func replacing(_ path: ArraySlice<Substring>, in container: Any, with value: Any?) throws -> Any {
        guard let first = path.first else { throw MissingPath(component: "") }
        let rest = path.dropFirst()
        if var object = container as? [String: Any] {
            let key = String(first)
            if rest.isEmpty {
                object[key] = value
            } else {
                guard let inner = object[key] else { throw MissingPath(component: key) }
                object[key] = try Self.replacing(rest, in: inner, with: value)
            }
            return object
        }
        guard var array = container as? [Any], let index = Int(first), array.indices.contains(index) else {
            throw MissingPath(component: String(first))
        }
        if rest.isEmpty {
            if let value { array[index] = value } else { array.remove(at: index) }
        } else {
            array[index] = try Self.replacing(rest, in: array[index], with: value)
        }
        return array
    }

    /// The error decoding `data` throws; fails the test if it throws none.
    static func error(decoding data: Data) -> AppConfigurationError? {
        #expect(throws: AppConfigurationError.self) { _ = try AppConfiguration.decode(data) }
    }

    // MARK: - The bundled file

    @Test("the bundled file loads and the iOS message carries its values")
    func bundledIOS() throws {
        let ios = try AppConfiguration.load(contentsOf: AppConfiguration.bundledFileURL).ios

        #expect([ios.minVersion.major, ios.minVersion.minor, ios.minVersion.patch] == [1, 5, 3])
        #expect(ios.exposureConfiguration.infectiousnessForDaysSinceOnsetOfSymptoms == [1: 1, 2: 2])
        #expect(ios.exposureConfiguration.attenuationDurationThresholds == [30, 50, 70])
        #expect(ios.exposureConfiguration.reportTypeRecursiveWeight == 1.0)
        #expect(ios.exposureDetectionParameters.maxExposureDetectionsPerInterval == 6)
        #expect(ios.keyDownloadParameters.revokedDayPackages.isEmpty)
        let risk = ios.riskCalculationParameters
        #expect(risk.minutesAtAttenuationWeights.count == 3)
        #expect(risk.minutesAtAttenuationWeights[1].attenuationRange.min == 55)
        #expect(risk.minutesAtAttenuationWeights[1].attenuationRange.max == 63)
        #expect(risk.minutesAtAttenuationWeights[1].attenuationRange.maxExclusive)
        #expect(risk.minutesAtAttenuationWeights[1].weight == 0.5)
        #expect(risk.normalizedTimePerDayToRiskLevelMapping.map(\.riskLevel) == [.low, .high])
        #expect(risk.normalizedTimePerDayToRiskLevelMapping[1].normalizedTimeRange.min == 15)
        #expect(risk.trlEncoding.reportTypeOffsetConfirmedTest == 6)
        #expect(risk.transmissionRiskValueMapping.first { $0.transmissionRiskLevel == 6 }?.transmissionRiskValue == 1.2)
        #expect(risk.maxEncounterAgeInDays == 10)
        let tracing = ios.presenceTracingParameters
        #expect(tracing.plausibleDeniabilityParameters.probabilityToFakeCheckInsIfSomeCheckIns == 0.005)
        #expect(tracing.plausibleDeniabilityParameters.probabilityToFakeCheckInsIfNoCheckIns == 0)
        #expect(tracing.qrCodeErrorCorrectionLevel == .medium)
        #expect(tracing.qrCodeDescriptors.first?.payloadEncoding == .base64)
    }

    @Test("the Android message carries the bundled file's values and shares the common parts with iOS")
    func bundledAndroid() throws {
        let configuration = try AppConfiguration.load(contentsOf: AppConfiguration.bundledFileURL)
        let android = configuration.android

        #expect(android.minVersionCode == 31)
        #expect(android.diagnosisKeysDataMapping.daysSinceOnsetToInfectiousness == [1: 1, 2: 2])
        #expect(android.diagnosisKeysDataMapping.reportTypeWhenMissing == 1)
        #expect(android.dailySummariesConfig.attenuationBucketThresholdDb == [30, 50, 70])
        #expect(android.dailySummariesConfig.attenuationBucketWeights == [1, 1, 1, 1])
        #expect(android.dailySummariesConfig.daysSinceExposureThreshold == 0)
        #expect(android.dailySummariesConfig.minimumWindowScore == 0)
        #expect(android.dailySummariesConfig.reportTypeWeights == [1: 1, 2: 1, 3: 1, 4: 1])
        #expect(android.keyDownloadParameters.downloadTimeoutInSeconds == 60)
        #expect(android.keyDownloadParameters.overallTimeoutInSeconds == 480)
        #expect(android.exposureDetectionParameters.overallTimeoutInSeconds == 900)
        #expect(android.supportedCountries.contains("DE"))
        let features = Dictionary(uniqueKeysWithValues: android.appFeatures.appFeatures.map { ($0.label, $0.value) })
        #expect(features["unencrypted-checkins-enabled"] == 0)
        #expect(features["dcc-person-count-max"] == 20)
        #expect(features["dcc-person-warn-threshold"] == 4)
        #expect(features["dcc-admission-check-scenarios-enabled"] == 0)
        #expect(features.keys.contains("validation-service-android-min-version-code"))
        #expect(
            ["major", "minor", "patch"].allSatisfy {
                features.keys.contains("validation-service-ios-min-version-\($0)")
            }
        )
        #expect(android.riskCalculationParameters == configuration.ios.riskCalculationParameters)
        #expect(android.appFeatures == configuration.ios.appFeatures)
        #expect(android.presenceTracingParameters == configuration.ios.presenceTracingParameters)
    }

    @Test("the apps read every TRL back from the DSOS and report type the distribution publishes (cwa-server §3.2)")
    func trlRoundTrip() throws {
        let android = try AppConfiguration.load(contentsOf: AppConfiguration.bundledFileURL).android
        let encoding = android.riskCalculationParameters.trlEncoding
        // Per TRL 1…8: published DSOS and ENF report type (4 recursive, 3 self report, 2 clinical, 1 confirmed test).
        let published: [(dsos: Int32, reportType: Int32)] = [
            (1, 4), (2, 4), (1, 3), (2, 3), (1, 2), (2, 2), (1, 1), (2, 1),
        ]
        let reportTypeOffsets: [Int32: Int32] = [
            4: encoding.reportTypeOffsetRecursive,
            3: encoding.reportTypeOffsetSelfReport,
            2: encoding.reportTypeOffsetConfirmedClinicalDiagnosis,
            1: encoding.reportTypeOffsetConfirmedTest,
        ]

        for (index, key) in published.enumerated() {
            let infectiousness = android.diagnosisKeysDataMapping.daysSinceOnsetToInfectiousness[key.dsos]
            let infectiousnessOffset =
                infectiousness == 2 ? encoding.infectiousnessOffsetHigh : encoding.infectiousnessOffsetStandard
            #expect(infectiousnessOffset + (reportTypeOffsets[key.reportType] ?? -100) == Int32(index + 1))
        }
    }

    @Test("both messages survive a round trip through their wire bytes")
    func wireRoundTrip() throws {
        let configuration = try AppConfiguration.load(contentsOf: AppConfiguration.bundledFileURL)

        let iosBytes: [UInt8] = try configuration.ios.serializedBytes()
        let androidBytes: [UInt8] = try configuration.android.serializedBytes()

        #expect(!iosBytes.isEmpty && !androidBytes.isEmpty)
        #expect(try ApplicationConfigurationIOS(serializedBytes: iosBytes) == configuration.ios)
        #expect(try ApplicationConfigurationAndroid(serializedBytes: androidBytes) == configuration.android)
    }

    @Test("re-serialising the bundled JSON unchanged still decodes, so the mutations below fail only for their change")
    func unchangedMutationBase() throws {
        let document = try JSONSerialization.jsonObject(with: Self.bundledData())
        let data = try JSONSerialization.data(withJSONObject: document)

        let configuration = try AppConfiguration.decode(data)

        #expect(configuration.android.minVersionCode == 31)
    }

    // MARK: - Bad files

    @Test("a value the apps cannot use is refused with the exact field", arguments: semanticMutations)
    func semanticMutation(_ mutation: Mutation) throws {
        let data = try Self.data(applying: mutation)

        let error = Self.error(decoding: data)

        #expect(error?.field == mutation.field)
        #expect(error?.problem.isEmpty == false)
    }

    @Test(
        "a missing or unknown key, a wrong type or a null is refused with the exact field",
        arguments: decodingMutations
    )
    func decodingMutation(_ mutation: Mutation) throws {
        let data = try Self.data(applying: mutation)

        let error = Self.error(decoding: data)

        #expect(error?.field == mutation.field)
    }

    @Test("the message names the field and says what is wrong")
    func message() throws {
        let data = try Self.data(
            applying: Mutation(
                path: "riskCalculation.minutesAtAttenuationWeights.2.attenuationRange.min",
                json: "80",
                field: ""
            )
        )

        let error = Self.error(decoding: data)

        let expected =
            "app configuration: riskCalculation.minutesAtAttenuationWeights[2].attenuationRange: min 80 is above max 73"
        #expect(error?.description == expected)
    }

    @Test("a missing required field is reported as missing")
    func missingField() throws {
        let data = try Self.data(applying: Mutation(path: "riskCalculation", json: nil, field: ""))

        let error = Self.error(decoding: data)

        #expect(error == AppConfigurationError(field: "riskCalculation", problem: "is missing"))
    }

    @Test("malformed JSON and a document that is not an object are refused at the root")
    func malformed() {
        let truncated = Self.error(decoding: Data(#"{"formatVersion": 1, "ios": {"#.utf8))
        let array = Self.error(decoding: Data("[]".utf8))

        #expect(truncated?.field == "(root)")
        #expect(truncated?.problem.contains("JSON") == true)
        #expect(array == AppConfigurationError(field: "(root)", problem: "expected an object"))
    }

    @Test("a file that cannot be read is named by its path")
    func unreadableFile() {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "absent-\(UUID().uuidString)/app-config.json"
        )

        let error = #expect(throws: AppConfigurationError.self) { _ = try AppConfiguration.load(contentsOf: url) }

        #expect(error?.field == url.path(percentEncoded: false))
        #expect(error?.problem.hasPrefix("cannot be read: ") == true)
    }
}
