// Decoding JSON request bodies with messages that say what is wrong, never what was sent.

package import Foundation
package import Hummingbird

extension Request {
    /// Decodes the body as JSON into `type`.
    ///
    /// 415 unless the `Content-Type` is `application/json` (parameters such as `charset` allowed); 400 with the
    /// failing field path (`testResults[3].result: expected an integer`) for malformed JSON or wrong types.
    /// Messages never contain submitted values.
    package func decodeJSON<Value: Decodable>(as type: Value.Type, context: some RequestContext) async throws -> Value {
        guard self.mediaType == "application/json" else {
            throw APIError(.unsupportedMediaType, "Content-Type must be application/json")
        }
        let buffer = try await self.body.collect(upTo: context.maxUploadSize)
        let data = Data(buffer.readableBytesView)
        do {
            return try JSONProblem.decoder.decode(Value.self, from: data)
        } catch let error as DecodingError {
            throw APIError(.badRequest, JSONProblem.describe(error, body: data))
        }
    }
}

extension Request {
    /// The media type of `Content-Type`, in lower case and without parameters such as `charset`.
    package var mediaType: String? {
        self.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
    }
}

/// Human-readable descriptions of JSON decoding failures.
package enum JSONProblem {
    /// One decoder for every request body (its configuration never changes).
    static let decoder = JSONDecoder()

    package static func describe(_ error: DecodingError, body: Data) -> String {
        switch error {
        case .typeMismatch(let type, let context):
            return "\(self.path(context.codingPath)): expected \(self.name(of: type))"
        case .valueNotFound(let type, let context):
            return "\(self.path(context.codingPath)): expected \(self.name(of: type)), got null"
        case .keyNotFound(let key, let context):
            return "\(self.path(context.codingPath + [key])) is required"
        case .dataCorrupted(let context) where !context.codingPath.isEmpty:
            return "\(self.path(context.codingPath)): invalid value"
        case .dataCorrupted:
            // Foundation reports a number that does not fit the field's integer type without a coding path.
            // Telling that apart from broken syntax keeps the message honest.
            let parses = (try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])) != nil
            return parses ? "body: a number is not an integer or is out of range" : "body is not valid JSON"
        @unknown default:
            return "body could not be decoded"
        }
    }

    /// `testResults[3].result` for a coding path; `body` for the root.
    package static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text.isEmpty ? "body" : text
    }

    private static func name(of type: Any.Type) -> String {
        switch type {
        case is any BinaryInteger.Type: "an integer"
        case is any FloatingPoint.Type: "a number"
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is [Any].Type: "an array"
        default: String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}
