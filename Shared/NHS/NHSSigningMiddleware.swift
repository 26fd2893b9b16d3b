// Signs the answers of the NHS API family's signed routes (nhs §2).

package import ENCrypto
package import ENServiceKit
import Foundation
package import HTTPTypes
package import Hummingbird
import NIOCore

extension HTTPField.Name {
    /// `keyId="<id>",signature="<Base64 DER>"` of an NHS answer or file.
    package static let amzMetaSignature = HTTPField.Name("X-Amz-Meta-Signature")!
    /// The signing time of an NHS answer or file.
    package static let amzMetaSignatureDate = HTTPField.Name("X-Amz-Meta-Signature-Date")!
    /// The app's id of its request, part of the signed bytes.
    package static let nhsRequestID = HTTPField.Name("Request-Id")!
}

/// Signs every answer of the routes it guards, whatever their status (200, 204, 404, 422, …; the errors too, which it
/// renders itself as the error boundary would), except 403, which the reference never signs. The bytes are
/// `<Request-Id>:<METHOD>:<path>:<date>:` and the body (`not-set` without a `Request-Id`; the path without its
/// query), so an app can trust the answer through any CDN or proxy, bound to its own request.
package struct NHSSigningMiddleware<Context: RequestContext>: RouterMiddleware {
    package let signer: NHSSigner
    package let clock: WallClock
    /// The most an answer may hold to be signed: the body is collected to sign it.
    package let maxBodyBytes: Int

    package init(signer: NHSSigner, clock: WallClock = .system, maxBodyBytes: Int = 8 * 1024 * 1024) {
        self.signer = signer
        self.clock = clock
        self.maxBodyBytes = maxBodyBytes
    }

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        var response = try await ErrorMiddleware<Context>().handle(request, context: context, next: next)
        guard response.status != .forbidden else { return response }
        let collector = BodyCollector(limit: self.maxBodyBytes)
        try await response.body.write(collector)
        let body = collector.buffer
        let headers = try self.signer.signAnswer(
            requestID: request.headers[.nhsRequestID],
            method: request.method.rawValue,
            path: request.uri.path,
            body: body.readableBytesView,
            at: self.clock.now
        )
        response.headers[.amzMetaSignature] = headers.signature
        response.headers[.amzMetaSignatureDate] = headers.date
        response.body = ResponseBody(byteBuffer: body)
        return response
    }
}

/// Collects an answer's body to sign it.
private final class BodyCollector: ResponseBodyWriter {
    var buffer = ByteBuffer()
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func write(_ buffer: ByteBuffer) async throws {
        guard self.buffer.readableBytes + buffer.readableBytes <= self.limit else {
            throw HTTPError(.internalServerError)
        }
        var buffer = buffer
        self.buffer.writeBuffer(&buffer)
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
