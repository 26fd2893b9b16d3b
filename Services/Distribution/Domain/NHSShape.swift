// The shapes the NHS app's static documents must have (nhs §6, §9), checked with the path of the offending member.

import ENNHS
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
