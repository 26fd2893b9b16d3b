// Rejects request bodies over the limit before they are read whole.

import HTTPTypes
package import Hummingbird

/// Enforces `HTTP_MAX_BODY_SIZE`: a declared `Content-Length` over the limit is refused before any body byte is
/// read; a body without a length (chunked) is cut off as soon as the running total passes the limit. Either way
/// the answer is 413 and the connection is closed, so the rest of an oversized upload is never processed.
package struct BodySizeLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    package let maxBytes: Int

    package init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        if let declared = request.headers[.contentLength] {
            guard let length = Int(declared), length >= 0 else {
                throw APIError(.badRequest, "invalid Content-Length")
            }
            guard length <= self.maxBytes else { throw self.tooLarge }
        }
        var request = request
        request.body = RequestBody(
            asyncSequence: LimitedBody(base: request.body, limit: self.maxBytes, error: self.tooLarge)
        )
        return try await next(request, context)
    }

    private var tooLarge: APIError {
        APIError(
            .contentTooLarge,
            "request body is larger than \(self.maxBytes) bytes",
            headers: [.connection: "close"]
        )
    }
}

/// A request body that throws once more than `limit` bytes have streamed through.
struct LimitedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: RequestBody
    let limit: Int
    let error: APIError

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RequestBody.AsyncIterator
        let limit: Int
        let error: APIError
        var total = 0

        mutating func next() async throws -> ByteBuffer? {
            guard let buffer = try await self.base.next() else { return nil }
            self.total += buffer.readableBytes
            guard self.total <= self.limit else { throw self.error }
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.base.makeAsyncIterator(), limit: self.limit, error: self.error)
    }
}
