// The NHS API family's request pipeline (nhs §1): maintenance mode, API keys, plain-text errors, the User-Agent.

package import ENServiceKit
import Foundation
package import HTTPTypes
package import Hummingbird
import Logging
import NIOCore

/// Answers 503 to everything while `MAINTENANCE_MODE` is on (nhs §1, step 2); otherwise passes the request on.
package struct NHSMaintenanceMiddleware<Context: RequestContext>: RouterMiddleware {
    package let enabled: Bool

    package init(enabled: Bool) {
        self.enabled = enabled
    }

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        guard self.enabled else { return try await next(request, context) }
        return Response(status: .serviceUnavailable, headers: [.retryAfter: "300"])
    }
}

/// Lets a request through only with an active key of `api` (nhs §1, steps 3 and 7): anything else is 403 with an
/// empty body, which the signing middleware inside this one never sees (a 403 is never signed).
package struct NHSAPIKeyMiddleware<Context: RequestContext>: RouterMiddleware {
    package let api: NHSAPIName
    package let verifier: NHSAPIKeyVerifier

    package init(api: NHSAPIName, verifier: NHSAPIKeyVerifier) {
        self.api = api
        self.verifier = verifier
    }

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        let valid: Bool
        do {
            valid = try await self.verifier.verify(request.headers[.authorization], api: self.api)
        } catch {
            // The key store is unreachable or every check slot is taken: an outage to retry, not a refusal.
            context.logger.warning(
                "NHS request refused: the API key could not be checked",
                metadata: ["error.type": "\(String(describing: type(of: error)))"]
            )
            return Response(status: .serviceUnavailable, headers: [.retryAfter: "1"])
        }
        guard valid else {
            context.logger.debug("NHS request refused: no valid API key", metadata: ["nhs.api": "\(self.api.rawValue)"])
            return Response(status: .forbidden)
        }
        return try await next(request, context)
    }
}

/// An answer of the NHS family with a plain-text body, as the reference's `ApiResponseException`s are answered
/// (`validation error: …`, `Test result lookup submitted for unknown testResultPollingToken`).
package struct NHSError: HTTPResponseError, Equatable, CustomStringConvertible {
    package let status: HTTPResponse.Status
    package let message: String
    package let headers: HTTPFields

    package init(_ status: HTTPResponse.Status, _ message: String = "", headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    /// 422 `validation error: <reason>`.
    package static func validation(_ reason: String) -> NHSError {
        NHSError(.unprocessableContent, "validation error: \(reason)")
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = NHSResponse.text(self.status, self.message)
        for field in self.headers { response.headers[field.name] = field.value }
        return response
    }

    package var description: String { "\(self.status.code) \(self.message)" }
}

/// Answers of the NHS family.
package enum NHSResponse {
    /// `text/plain` with `text` (no body and no content type when it is empty).
    package static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        guard !text.isEmpty else { return Response(status: status) }
        return Response(
            status: status,
            headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: text))
        )
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return encoder
    }()

    /// `application/json` with `value` encoded.
    package static func json(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try Self.encoder.encode(value)))
        )
    }
}

/// The app's `User-Agent` of the NHS family: `p=<Android|iOS>,o=<os version>,v=<major.minor[.patch]>,b=<build>`
/// (nhs §1). Only the version matters to the server (§3.4); a malformed one is unknown.
package struct NHSUserAgent: Sendable, Equatable {
    /// `[major, minor, patch]`, `nil` when the header or its `v` is missing or malformed.
    package let version: [Int]?

    package init(_ header: String?) {
        var version: [Int]? = nil
        for part in (header ?? "").split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces) == "v" else { continue }
            let numbers = pair[1].split(separator: ".", omittingEmptySubsequences: false)
            guard (2...3).contains(numbers.count),
                numbers.allSatisfy({
                    !$0.isEmpty && $0.count <= 6 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber)
                })
            else { break }
            version = numbers.compactMap { Int($0) } + (numbers.count == 2 ? [0] : [])
        }
        self.version = version
    }

    /// Whether the app is known to be at most `major.minor` (any patch); an unknown version is not.
    package func isAtMost(major: Int, minor: Int) -> Bool {
        guard let version else { return false }
        return version[0] < major || (version[0] == major && version[1] <= minor)
    }
}
