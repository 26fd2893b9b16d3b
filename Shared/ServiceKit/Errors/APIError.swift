// The error every service answers a client mistake with: a status and `{"error": "..."}`.

import Foundation
package import HTTPTypes
package import Hummingbird

/// A client-facing error (Shared/README.md, "Errors"): the status and a short message, rendered as
/// `{"error": "<message>"}`. Messages describe the rule that was broken and never echo secrets or payload bytes.
package struct APIError: HTTPResponseError, Equatable, CustomStringConvertible {
    package let status: HTTPResponse.Status
    package let message: String
    package let headers: HTTPFields
    /// Whether the answer has an empty body, as the reference's app-facing protobuf endpoints answer; the message is
    /// then only logged.
    package private(set) var isBodyless = false

    package init(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    /// The same error, answered with an empty body.
    package func withoutBody() -> APIError {
        var error = self
        error.isBodyless = true
        return error
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        guard !self.isBodyless else { return Response(status: self.status, headers: self.headers) }
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(
            status: self.status,
            headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: Self.body(self.message)))
        )
    }

    package var description: String { "\(self.status.code) \(self.message)" }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    /// `{"error":"<message>"}` with proper JSON escaping.
    static func body(_ message: String) -> [UInt8] {
        let data = (try? Self.encoder.encode(["error": message])) ?? Data(#"{"error":"error"}"#.utf8)
        return Array(data)
    }
}

/// A domain error that knows the client-facing error it stands for (including deliberate 5xx such as 503).
package protocol APIErrorConvertible: Error {
    var apiError: APIError { get }
}
