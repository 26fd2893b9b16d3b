// Keys the app-configuration model does not know are refused, so a misspelt optional key is not silently ignored.

import Foundation

extension AppConfigurationFile {
    /// Throws at the first key of `data` that decoding did not use (`maxExclusve` for `maxExclusive` would otherwise
    /// leave a bound closed without a word). The decoded file is encoded again: a key of the original JSON that the
    /// encoding lacks is one the model does not have. A `null` for an optional key is allowed.
    static func refuseUnknownKeys(in data: Data, decoded file: AppConfigurationFile) throws(AppConfigurationError) {
        let original: Any
        let known: Any
        do {
            original = try JSONSerialization.jsonObject(with: data)
            known = try JSONSerialization.jsonObject(with: JSONEncoder().encode(file))
        } catch {
            // The data decoded a moment ago, so this does not happen; the file is then taken as it is.
            return
        }
        try Self.compare(original, with: known, at: "")
    }

    private static func compare(_ original: Any, with known: Any, at path: String) throws(AppConfigurationError) {
        if let object = original as? [String: Any], let knownObject = known as? [String: Any] {
            for (key, value) in object.sorted(by: { $0.key < $1.key }) where !(value is NSNull) {
                let field = AppConfigurationError.appending(key, to: path)
                guard let knownValue = knownObject[key] else {
                    throw AppConfigurationError(field: field, problem: "is not a known field (misspelt?)")
                }
                try Self.compare(value, with: knownValue, at: field)
            }
        } else if let array = original as? [Any], let knownArray = known as? [Any] {
            for (index, element) in zip(array.indices, array) where index < knownArray.count {
                try Self.compare(element, with: knownArray[index], at: "\(path)[\(index)]")
            }
        }
    }
}
