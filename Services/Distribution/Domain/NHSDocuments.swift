// The NHS app's static configuration documents (nhs §6, §9): JSON of our own content (Resources/nhs, or the
// operator's NHS_DOCUMENTS_DIR), checked against their shapes at start-up and published signed under
// `/distribution/<name>`.

import Foundation

/// One static document: its name (the path under `/distribution/`) and bytes, exactly as the file holds them.
struct NHSDocument: Sendable, Equatable {
    let name: String
    let bytes: [UInt8]

    var key: String { "distribution/\(self.name)" }
}

/// The documents and their shapes.
enum NHSDocuments {
    private static let numbers3: NHSShape = .object(["alpha": .number, "beta": .number, "kappa": .number])

    /// Every document distribution publishes, by name (the file is `<name>.json`).
    static let shapes: [String: NHSShape] = [
        "availability-ios": .object([
            "minimumOSVersion": .object(["value": .version, "description": .languageMap]),
            "recommendedOSVersion": .object(["value": .version, "title": .languageMap, "description": .languageMap]),
            "minimumAppVersion": .object(["value": .version, "description": .languageMap]),
            "recommendedAppVersion": .object(["value": .version, "title": .languageMap, "description": .languageMap]),
        ]),
        "availability-android": .object([
            "minimumSDKVersion": .object(["value": .integer, "description": .languageMap]),
            "minimumAppVersion": .object(["value": .integer, "description": .languageMap]),
            "recommendedAppVersion": .object(["value": .integer, "title": .languageMap, "description": .languageMap]),
        ]),
        "exposure-configuration": .object([
            "exposureNotification": .object([
                "minimumRiskScore": .number, "attenuationDurationThresholds": .array(.number, count: 2...2),
                "attenuationLevelValues": .array(.number, count: 8...8),
                "daysSinceLastExposureLevelValues": .array(.number, count: 8...8),
                "durationLevelValues": .array(.number, count: 8...8),
                "transmissionRiskLevelValues": .array(.number, count: 8...8), "attenuationWeight": .number,
                "daysSinceLastExposureWeight": .number, "durationWeight": .number, "transmissionRiskWeight": .number,
            ]),
            "riskCalculation": .object([
                "durationBucketWeights": .array(.number, count: 3...3), "riskThreshold": .number,
            ]),
            "riskScore": .object([
                "sampleResolution": .number, "expectedDistance": .number, "minimumDistance": .number,
                "rssiParameters": .object(["weightCoefficient": .number, "intercept": .number, "covariance": .number]),
                "powerLossParameters": .object([
                    "wavelength": .number, "pathLossFactor": .number, "refDeviceLoss": .number,
                ]),
                "observationType": .string, "initialData": .object(["mean": .number, "covariance": .number]),
                "smootherParameters": Self.numbers3,
            ]),
            "v2RiskCalculation": .object([
                "daysSinceOnsetToInfectiousness": .array(.integer, count: 29...29),
                "infectiousnessWeights": .array(.number, count: 3...3), "reportTypeWhenMissing": .integer,
                "riskThreshold": .number,
            ]),
        ]),
        "self-isolation": .object([
            "durationDays": .object([
                "indexCaseSinceSelfDiagnosisOnset": .integer, "indexCaseSinceSelfDiagnosisUnknownOnset": .integer,
                "contactCase": .integer, "maxIsolation": .integer, "pendingTasksRetentionPeriod": .integer,
                "indexCaseSinceTestResultEndDate": .integer,
            ])
        ]),
        "symptomatic-questionnaire": .object([
            "symptoms": .array(
                .object(["title": .languageMap, "description": .languageMap, "riskWeight": .number]),
                count: 1...50
            ),
            "riskThreshold": .number, "symptomsOnsetWindowDays": .integer,
        ]),
        "risky-venue-configuration": .object(["durationDays": .object(["optionToBookATest": .integer])]),
        "tier-metadata": .dictionary(Self.tier),
    ]

    /// One entry of the tier metadata (nhs §6).
    static let tier: NHSShape = .object(
        [
            "colorScheme": .oneOf(["green", "yellow", "red", "amber", "neutral"]),
            "colorSchemeV2": .oneOf(["black", "maroon", "green", "yellow", "red", "amber", "neutral"]),
            "name": .languageMap, "heading": .languageMap, "content": .languageMap, "linkTitle": .languageMap,
            "linkUrl": .languageMap,
            "policyData": .object(
                [
                    "localAuthorityRiskTitle": .languageMap, "heading": .languageMap, "content": .languageMap,
                    "footer": .languageMap,
                    "policies": .array(
                        .object(["policyIcon": .string, "policyHeading": .languageMap, "policyContent": .languageMap]),
                        count: 0...50
                    ),
                ],
                optional: ["footer", "policies"]
            ),
        ],
        optional: ["policyData"]
    )

    /// The documents that `publish availability` republishes alone.
    static let availability = ["availability-android", "availability-ios"]

    /// Reads and checks every document from `folder`; the problems name the file and the member.
    static func load(from folder: URL) -> (documents: [NHSDocument], problems: [String]) {
        var documents: [NHSDocument] = []
        var problems: [String] = []
        for name in Self.shapes.keys.sorted() {
            let file = folder.appendingPathComponent("\(name).json")
            guard let data = FileManager.default.contents(atPath: file.path) else {
                problems.append("\(name).json is missing or unreadable")
                continue
            }
            guard let value = try? JSONSerialization.jsonObject(with: data) else {
                problems.append("\(name).json is not JSON")
                continue
            }
            if let problem = Self.shapes[name]?.problem(value, at: "") {
                problems.append("\(name).json: \(problem)")
                continue
            }
            documents.append(NHSDocument(name: name, bytes: [UInt8](data)))
        }
        return (documents, problems)
    }

    /// The folder of the documents shipped with the service.
    static var bundledFolder: URL? {
        Bundle.module.url(forResource: "nhs", withExtension: nil)
    }
}
