// Gives every request an id that appears in its log lines and in the `X-Request-ID` response header.

import HTTPTypes
package import Hummingbird
import Logging

/// Uses the gateway's `X-Request-ID` when it is a plain token (letters, digits, `-`, `_`, `.`; at most 64),
/// otherwise a new random id, and echoes it in the response. Log lines carry it as `request.id`.
/// (Not Hummingbird's `context.id`: it force-unwraps logger metadata, which a discarding log handler never keeps.)
package struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    package static var headerName: HTTPField.Name { HTTPField.Name("X-Request-ID")! }

    package init() {}

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        var context = context
        let id = request.headers[Self.headerName].flatMap { Self.isAcceptable($0) ? $0 : nil } ?? Self.newID()
        context.logger[metadataKey: "hb.request.id"] = nil
        context.logger[metadataKey: "request.id"] = "\(id)"
        // Errors never get here: the error boundary inside this middleware turns every one into a response.
        var response = try await next(request, context)
        response.headers[Self.headerName] = id
        return response
    }

    /// Two random 64-bit values in hex, from the system's random generator.
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 16) + "-" + String(generator.next() as UInt64, radix: 16)
    }

    static func isAcceptable(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    true
                default: false
                }
            }
    }
}
