// Integer fields of the app-configuration file, read so that a fraction or an out-of-range number names its field.

import Foundation

extension AppConfigurationFile {
    /// An integer field. Foundation's `JSONDecoder` on Linux reports a number the integer type cannot hold (`1.5`, or
    /// `3000000000` for an `Int32`) as invalid JSON at the root; read through this wrapper, the error carries the
    /// field's coding path like any other decoding error.
    @propertyWrapper
    struct WholeNumber<Value: FixedWidthInteger & Codable & Sendable>: Codable, Sendable, Equatable {
        var wrappedValue: Value

        init(wrappedValue: Value) {
            self.wrappedValue = wrappedValue
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let exact = try? container.decode(Value.self) {
                self.wrappedValue = exact
                return
            }
            let number: Double
            do {
                number = try container.decode(Double.self)
            } catch DecodingError.typeMismatch(_, let context) {
                throw DecodingError.typeMismatch(Value.self, context)
            } catch DecodingError.valueNotFound(_, let context) {
                throw DecodingError.valueNotFound(Value.self, context)
            }
            guard let value = Value(exactly: number) else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription:
                        "must be a whole number from \(Value.min) to \(Value.max), is \(AppConfigurationRules.format(number))"
                )
            }
            self.wrappedValue = value
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(self.wrappedValue)
        }
    }

    /// A list of integers, each read as a `WholeNumber` (so an error names the element's index).
    @propertyWrapper
    struct WholeNumbers<Value: FixedWidthInteger & Codable & Sendable>: Codable, Sendable, Equatable {
        var wrappedValue: [Value]

        init(wrappedValue: [Value]) {
            self.wrappedValue = wrappedValue
        }

        init(from decoder: any Decoder) throws {
            self.wrappedValue = try [WholeNumber<Value>](from: decoder).map(\.wrappedValue)
        }

        func encode(to encoder: any Encoder) throws {
            try self.wrappedValue.encode(to: encoder)
        }
    }

    /// A map with integer values, each read as a `WholeNumber` (so an error names the entry's key).
    @propertyWrapper
    struct WholeNumberValues<Value: FixedWidthInteger & Codable & Sendable>: Codable, Sendable, Equatable {
        var wrappedValue: [String: Value]

        init(wrappedValue: [String: Value]) {
            self.wrappedValue = wrappedValue
        }

        init(from decoder: any Decoder) throws {
            self.wrappedValue = try [String: WholeNumber<Value>](from: decoder).mapValues(\.wrappedValue)
        }

        func encode(to encoder: any Encoder) throws {
            try self.wrappedValue.encode(to: encoder)
        }
    }
}
