// The NHS app's static configuration documents (nhs §6, §9): JSON of our own content (Resources/nhs, or the
// operator's NHS_DOCUMENTS_DIR), checked against their shapes at start-up and published signed under
// `/distribution/<name>`.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation

/// The shape a JSON value must have; checked with the path of the offending member.
indirect enum NHSShape: Sendable {
    case string
    case integer
    case number
    case boolean
    /// A dotted version such as `13.5.0` or `3.6`.
    case version
    /// One of these strings.
    case oneOf([String])
    /// A language map: language code → text, `en` among them.
    case languageMap
    /// These members (`optional` may be missing); other members are refused (a typo would otherwise ship).
    case object([String: NHSShape], optional: Set<String> = [])
    /// Any member names, each value of `NHSShape`.
    case dictionary(NHSShape)
    case array(NHSShape, count: ClosedRange<Int>)

    /// The first problem of `value`, as `path: problem`; `nil` when it fits.
    func problem(_ value: Any?, at path: String) -> String? {
        func fail(_ text: String) -> String { "\(path.isEmpty ? "the document" : path) \(text)" }
        switch self {
        case .string:
            return (value as? String).map { $0.isEmpty ? fail("must not be empty") : nil } ?? fail("must be a string")
        case .integer:
            guard let number = value as? NSNumber, !NHSJSONObject.isBoolean(number),
                number.doubleValue.rounded() == number.doubleValue
            else { return fail("must be a whole number") }
            return nil
        case .number:
            guard let number = value as? NSNumber, !NHSJSONObject.isBoolean(number) else {
                return fail("must be a number")
            }
            return nil
        case .boolean:
            guard let number = value as? NSNumber, NHSJSONObject.isBoolean(number) else {
                return fail("must be true or false")
            }
            return nil
        case .version:
            guard let text = value as? String,
                text.split(separator: ".", omittingEmptySubsequences: false).count >= 2,
                text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy({
                    !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber)
                })
            else { return fail("must be a version such as 13.5.0") }
            return nil
        case .oneOf(let choices):
            guard let text = value as? String, choices.contains(text) else {
                return fail("must be one of \(choices.joined(separator: ", "))")
            }
            return nil
        case .languageMap:
            guard let map = value as? [String: Any], map["en"] is String else {
                return fail("must be a language map with an \"en\" text")
            }
            for (language, text) in map.sorted(by: { $0.key < $1.key }) {
                guard (text as? String).map({ !$0.isEmpty }) == true else {
                    return "\(path).\(language) must be a text"
                }
            }
            return nil
        case .object(let members, let optional):
            guard let object = value as? [String: Any] else { return fail("must be an object") }
            for name in object.keys.sorted() where members[name] == nil {
                return "\(path.isEmpty ? "" : path + ".")\(name) is not a member of this document"
            }
            for (name, shape) in members.sorted(by: { $0.key < $1.key }) {
                let child = path.isEmpty ? name : "\(path).\(name)"
                guard let member = object[name] else {
                    if optional.contains(name) { continue }
                    return "\(child) is missing"
                }
                if let problem = shape.problem(member, at: child) { return problem }
            }
            return nil
        case .dictionary(let shape):
            guard let object = value as? [String: Any], !object.isEmpty else {
                return fail("must be a non-empty object")
            }
            for (name, member) in object.sorted(by: { $0.key < $1.key }) {
                if let problem = shape.problem(member, at: path.isEmpty ? name : "\(path).\(name)") { return problem }
            }
            return nil
        case .array(let shape, let count):
            guard let array = value as? [Any] else { return fail("must be an array") }
            guard count.contains(array.count) else {
                let wanted =
                    count.lowerBound == count.upperBound
                    ? "\(count.lowerBound)" : "\(count.lowerBound) to \(count.upperBound)"
                return fail("must have \(wanted) elements, has \(array.count)")
            }
            for (index, element) in array.enumerated() {
                if let problem = shape.problem(element, at: "\(path)[\(index)]") { return problem }
            }
            return nil
        }
    }
}

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

/// The NHS side of distribution-service: the documents and the key that signs them.
struct NHSDistribution: Sendable {
    let documents: [NHSDocument]
    let signer: NHSSigner

    /// The documents as signed CDN objects (`date:` and the bytes, nhs §2), all signed at `date`.
    func objects(names: [String]? = nil, at date: Date) throws -> [CDNObject] {
        try self.documents.filter { names?.contains($0.name) ?? true }.map { document in
            try CDNObject.signedJSON(key: document.key, body: document.bytes, signer: self.signer, at: date)
        }
    }
}

extension CDNObject {
    /// A JSON document with the NHS file signature over `date:` ‖ the bytes (nhs §2), as the stores publish it.
    static func signedJSON(key: String, body: [UInt8], signer: NHSSigner, at date: Date) throws -> CDNObject {
        let headers = try signer.signFile(body, at: date)
        let signature = CDNObject.Signature(value: headers.signature, date: headers.date)
        return CDNObject(
            key: key,
            body: body,
            contentType: .json,
            isDirectoryIndex: false,
            checksum: CDNObject.signedChecksum(body, keyID: signature.keyID),
            signature: signature
        )
    }
}
