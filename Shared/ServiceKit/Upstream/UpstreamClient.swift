// Calls to a peer service's internal API: timeouts, bounded retries with full jitter, and no redirects.

import AsyncHTTPClient
package import ENCrypto
import ENPersistence
import Foundation
import HTTPTypes
package import Logging
package import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// How hard a client tries to reach a peer.
package struct UpstreamPolicy: Sendable, Equatable {
    package var connectTimeout: Duration = .seconds(2)
    package var readTimeout: Duration = .seconds(5)
    /// Further attempts after the first, for connection errors, timeouts and 5xx answers.
    package var retries = 2
    /// The first back-off; each further one doubles, and the actual wait is uniform in [0, back-off] ("full jitter").
    package var backoff: Duration = .milliseconds(100)

    package init() {}

    /// Reads `<PREFIX>_CONNECT_TIMEOUT`, `<PREFIX>_READ_TIMEOUT`, `<PREFIX>_RETRIES` and `<PREFIX>_RETRY_BACKOFF`.
    package init(settings: SettingsReader, prefix: String, peer: String, defaults: UpstreamPolicy = UpstreamPolicy()) {
        self.connectTimeout = settings.duration(
            "\(prefix)_CONNECT_TIMEOUT",
            default: defaults.connectTimeout,
            help: "Connect timeout towards \(peer)."
        )
        self.readTimeout = settings.duration(
            "\(prefix)_READ_TIMEOUT",
            default: defaults.readTimeout,
            help: "Read timeout towards \(peer)."
        )
        self.retries = settings.int(
            "\(prefix)_RETRIES",
            default: defaults.retries,
            range: 0...5,
            help: "Retries of a failed call to \(peer)."
        )
        self.backoff = settings.duration(
            "\(prefix)_RETRY_BACKOFF",
            default: defaults.backoff,
            help: "First back-off between retries (doubles, jittered)."
        )
    }
}

/// A peer's answer that is not a server error.
package struct UpstreamResponse: Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: ByteBuffer

    /// The first value of header `name` (case-insensitive).
    package func header(_ name: String) -> String? {
        self.headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// The peer gave no usable answer within the retries, or the call was cancelled.
package struct UpstreamUnavailable: Error, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}

/// An HTTP client for one peer, run as a service of the application so it is shut down after the servers.
package final class UpstreamClient: Service, Sendable {
    private let http: HTTPClient
    private let peer: String
    private let policy: UpstreamPolicy
    private let logger: Logger
    private let serviceToken: ServiceTokenSigner
    /// The largest answer read from the peer.
    private static let maxBodyBytes = 64 * 1024

    /// - Parameters:
    ///   - peer: the peer's service name, the `aud` of the service token every request carries.
    ///   - serviceToken: signs the tokens this service authenticates with (`X-CWA-Service-Token`).
    package init(peer: String, policy: UpstreamPolicy, serviceToken: ServiceTokenSigner, logger: Logger) {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: TimeAmount(policy.connectTimeout), read: TimeAmount(policy.readTimeout))
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.peer = peer
        self.policy = policy
        self.serviceToken = serviceToken
        self.logger = logger
    }

    package func run() async throws {
        try? await gracefulShutdown()
        try await self.shutdown()
    }

    package func shutdown() async throws {
        try await self.http.shutdown()
    }

    /// Which failed attempts may be repeated.
    package enum Retries: Sendable {
        /// Connection errors, timeouts and 5xx answers: for calls that change nothing (a lookup).
        case allFailures
        /// Only attempts that never reached the peer (no connection): for calls that change state on the first
        /// success (using up a TAN), where a repeat after a lost answer would be refused.
        case unsentOnly
    }

    /// POSTs `json` to `url` and returns the first answer below 500. Failed attempts that `retries` admits are
    /// repeated `policy.retries` times after a jittered, doubling back-off.
    package func postJSON(
        _ url: String,
        _ json: String,
        headers: [(String, String)] = [],
        retries: Retries = .allFailures
    ) async throws(UpstreamUnavailable) -> UpstreamResponse {
        try await self.call(url, json, headers: headers, retries: retries)
    }

    /// POSTs `body` as JSON, encoded by `JSONEncoder` with sorted keys (so a body's bytes follow from its value);
    /// otherwise as `postJSON(_:_:headers:retries:)`.
    package func postJSON(
        _ url: String,
        encoding body: some Encodable,
        headers: [(String, String)] = [],
        retries: Retries = .allFailures
    ) async throws(UpstreamUnavailable) -> UpstreamResponse {
        let json: Data
        do {
            json = try Self.encoder.encode(body)
        } catch {
            throw UpstreamUnavailable("the request body could not be encoded as JSON")
        }
        return try await self.call(url, String(decoding: json, as: UTF8.self), headers: headers, retries: retries)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// GETs `url` (a lookup: every failed attempt may be repeated) and returns the first answer below 500.
    package func get(_ url: String) async throws(UpstreamUnavailable) -> UpstreamResponse {
        try await self.call(url, nil, headers: [], retries: .allFailures)
    }

    /// A POST of `json`, or a GET when it is `nil`, repeated as `retries` admits, within the request's deadline
    /// (`DatabasePool.deadline`, which ServiceKit sets for every request): an attempt waits at most until then, and
    /// none starts after it, so a peer that hangs costs the caller a 503 before the gateway's timeout, as a database
    /// that hangs does. Jobs (no deadline) wait for the policy's timeouts only.
    private func call(
        _ url: String,
        _ json: String?,
        headers: [(String, String)],
        retries: Retries
    ) async throws(UpstreamUnavailable) -> UpstreamResponse {
        var generator = SystemRandomNumberGenerator()
        var backoff = self.policy.backoff
        var attempt = 0
        let deadline = DatabasePool.deadline
        while true {
            attempt += 1
            let failure: String
            var timeout = self.policy.connectTimeout + self.policy.readTimeout
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else { throw self.pastDeadline(attempts: attempt - 1) }
                timeout = min(timeout, left)
            }
            switch await self.attempt(url, json, headers: headers, timeout: timeout) {
            case .answer(let response):
                // The status and the attempt only: the URL, the body and the answer may hold a secret.
                self.logger.debug(
                    "\(self.peer) answered",
                    metadata: ["upstream.status": "\(response.status)", "upstream.attempts": "\(attempt)"]
                )
                if response.status == 401 || response.status == 403 {
                    // The peer refused this service (its service token or, for the portal, the officer's bearer
                    // token): the caller answers 503, so the reason is only here. Our services' error bodies name the
                    // broken rule and never a secret.
                    self.logger.warning(
                        "\(self.peer) refused the call",
                        metadata: [
                            "upstream.status": "\(response.status)",
                            "upstream.error": "\(String(buffer: response.body).prefix(200))",
                        ]
                    )
                }
                return response
            case .cancelled: throw UpstreamUnavailable("the call was cancelled")
            case .failed(let reason, let reachedPeer):
                failure = reason
                if reachedPeer, retries == .unsentOnly {
                    self.logger.warning(
                        "\(self.peer) failed; not repeated",
                        metadata: ["upstream.failure": "\(failure)"]
                    )
                    throw UpstreamUnavailable(failure)
                }
            }
            guard attempt <= self.policy.retries, !Task.isCancelled else {
                self.logger.warning(
                    "\(self.peer) unavailable",
                    metadata: ["upstream.failure": "\(failure)", "upstream.attempts": "\(attempt)"]
                )
                throw UpstreamUnavailable(failure)
            }
            let wait = backoff * Double.random(in: 0...1, using: &generator)
            backoff = backoff * 2
            if let deadline, ContinuousClock.now.advanced(by: wait) >= deadline {
                throw self.pastDeadline(attempts: attempt)
            }
            do { try await Task.sleep(for: wait) } catch { throw UpstreamUnavailable("the call was cancelled") }
        }
    }

    private enum Attempt {
        case answer(UpstreamResponse)
        /// A failure, and whether the request may have reached the peer.
        case failed(String, reachedPeer: Bool)
        case cancelled
    }

    /// The request's deadline passed before a usable answer: logged with the attempts made, then unavailable.
    private func pastDeadline(attempts: Int) -> UpstreamUnavailable {
        self.logger.warning(
            "\(self.peer) unavailable within the request's deadline",
            metadata: ["upstream.attempts": "\(attempts)"]
        )
        return UpstreamUnavailable("no answer within the request's deadline")
    }

    private func attempt(
        _ url: String,
        _ json: String?,
        headers: [(String, String)],
        timeout: Duration
    ) async -> Attempt {
        var request = HTTPClientRequest(url: url)
        request.method = json == nil ? .GET : .POST
        if json != nil { request.headers.add(name: "Content-Type", value: "application/json") }
        request.headers.add(
            name: HTTPField.Name.cwaServiceToken.rawName,
            value: self.serviceToken.token(audience: self.peer, now: Date())
        )
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json { request.body = .bytes(ByteBuffer(string: json)) }
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await self.http.execute(
                request,
                timeout: TimeAmount(timeout)
            )
            body = try await response.body.collect(upTo: Self.maxBodyBytes)
        } catch let error as HTTPClientError where error == .cancelled {
            return .cancelled
        } catch is CancellationError {
            return .cancelled
        } catch {
            return .failed(
                "transport: \(String(reflecting: type(of: error)))",
                reachedPeer: !Self.isConnectFailure(error)
            )
        }
        if (500...599).contains(response.status.code) {
            return .failed("status \(response.status.code)", reachedPeer: true)
        }
        return .answer(
            UpstreamResponse(
                status: Int(response.status.code),
                headers: response.headers.map { ($0.name, $0.value) },
                body: body
            )
        )
    }
}

extension UpstreamClient {
    /// Whether `error` happened before a connection existed, so no request can have been sent: a connect that failed or
    /// timed out, or a request that waited in the client's pool for a connection past the connect timeout.
    package static func isConnectFailure(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError {
            return error == .connectTimeout || error == .getConnectionFromPoolTimeout
        }
        if let error = error as? ChannelError, case .connectTimeout = error { return true }
        if let error = error as? IOError { return error.errnoCode == ECONNREFUSED }
        return false
    }
}

extension String {
    /// The text without any trailing repetitions of `suffix` (`http://host/` → `http://host`).
    package func trimmingSuffix(_ suffix: String) -> String {
        var text = self
        while text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }
}
