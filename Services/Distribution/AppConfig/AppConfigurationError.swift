// A problem in the app-configuration file, named by the path of the field that has it.

import Foundation

/// Why the app-configuration file was refused. `field` is a dotted path into the JSON with array indices in brackets
/// and map keys quoted (`riskCalculation.minutesAtAttenuationWeights[2].attenuationRange`,
/// `android.diagnosisKeysDataMapping.daysSinceOnsetToInfectiousness["15"]`); `(root)` for the document as a whole, or
/// the file path when the file cannot be read.
struct AppConfigurationError: Error, CustomStringConvertible, Equatable {
    let field: String
    let problem: String

    /// The path of the whole document.
    static let root = "(root)"

    var description: String { "app configuration: \(self.field): \(self.problem)" }

    init(field: String, problem: String) {
        self.field = field
        self.problem = problem
    }

    /// Names the field a `JSONDecoder` stopped at (missing key, wrong type, null, malformed JSON).
    init(_ error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            self.init(field: Self.path(context.codingPath + [key]), problem: "is missing")
        case .valueNotFound(let type, let context):
            self.init(field: Self.path(context.codingPath), problem: "is null, expected \(Self.describe(type))")
        case .typeMismatch(let type, let context):
            self.init(field: Self.path(context.codingPath), problem: "expected \(Self.describe(type))")
        case .dataCorrupted(let context):
            // Malformed JSON has an empty path; the underlying parser error says where it stopped.
            var problem = context.debugDescription
            if let underlying = context.underlyingError {
                problem += " " + Self.detail(of: underlying)
            }
            self.init(field: Self.path(context.codingPath), problem: problem)
        @unknown default:
            self.init(field: Self.root, problem: "cannot be decoded: \(error)")
        }
    }

    /// Like `init(_:)`, but a problem at the root (malformed JSON) is described by `JSONSerialization`, which says
    /// where the text goes wrong; Foundation's `JSONDecoder` on Linux does not.
    init(_ error: DecodingError, in data: Data) {
        guard case .dataCorrupted(let context) = error, context.codingPath.isEmpty else {
            self.init(error)
            return
        }
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)
            self.init(error)
        } catch {
            self.init(field: Self.root, problem: "is not valid JSON " + Self.detail(of: error))
        }
    }

    /// `a.b[2].c` from a coding path; a key that is not an identifier (a map key such as `"15"`) becomes `["15"]`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var path = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue == "Index \(index)" {
                path += "[\(index)]"
            } else {
                path = Self.appending(key.stringValue, to: path)
            }
        }
        return path.isEmpty ? Self.root : path
    }

    /// `path.name`, or `path["name"]` when `name` does not start with a letter.
    static func appending(_ name: String, to path: String) -> String {
        guard let first = name.unicodeScalars.first, CharacterSet.letters.contains(first) else {
            return path + "[\"\(name)\"]"
        }
        return path.isEmpty ? name : path + "." + name
    }

    /// JSON words for the Swift types of the file model.
    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Double.Type: return "a number"
        case is Int.Type, is Int32.Type, is Int64.Type: return "an integer"
        default: return String(describing: type).hasPrefix("Array<") ? "an array" : "an object"
        }
    }

    /// The parser's own words (Foundation keeps them in the debug description of its error).
    private static func detail(of error: any Error) -> String {
        if let cocoa = error as? CocoaError, let text = cocoa.userInfo[NSDebugDescriptionErrorKey] as? String {
            return "(\(text))"
        }
        return "(\(error))"
    }
}
