// The client for test-result-service's internal API: timeouts, bounded retries with jitter.

import AsyncHTTPClient
import ENServiceKit
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// A result as test-result-service reports it to verification (cwa-satellites §2.1): codes 0–9.
struct UpstreamTestResult: Decodable, Equatable, Sendable {
    var testResult: Int
    var sc: Int64?
    var labId: String?
}

/// test-result-service did not give a usable answer within the retries.
struct TestResultUnavailable: Error, CustomStringConvertible {
    var description: String
}

/// How hard the client tries.
struct UpstreamPolicy: Sendable, Equatable {
    var connectTimeout: Duration = .seconds(2)
    var readTimeout: Duration = .seconds(5)
    /// Further attempts after the first, for connection errors, timeouts and 5xx answers.
    var retries = 2
    /// The first back-off; each further one doubles, and the actual wait is uniform in [0, back-off] ("full jitter").
    var backoff: Duration = .milliseconds(100)

    init() {}

    init(settings: SettingsReader) {
        let defaults = UpstreamPolicy()
        self.connectTimeout = settings.duration(
            "TEST_RESULT_CONNECT_TIMEOUT",
            default: defaults.connectTimeout,
            help: "Connect timeout towards test-result-service."
        )
        self.readTimeout = settings.duration("TEST_RESULT_READ_TIMEOUT", default: defaults.readTimeout, help: "Read timeout towards test-result-service.")
        self.retries = settings.int("TEST_RESULT_RETRIES", default: defaults.retries, range: 0...5, help: "Retries of a failed call to test-result-service.")
        self.backoff = settings.duration("TEST_RESULT_RETRY_BACKOFF", default: defaults.backoff, help: "First back-off between retries (doubles, jittered).")
    }
}

/// Asks test-result-service for the result of a hashed GUID or DOB hash. The HTTP client is shut down when the
/// service group stops (the client runs as a service of the application).
final class TestResultClient: Service, Sendable {
    private let http: HTTPClient
    private let url: String
    private let policy: UpstreamPolicy
    private let logger: Logger

    /// - Parameter baseURL: `TEST_RESULT_INTERNAL_URL`, e.g. `http://127.0.0.1:8013`.
    init(baseURL: String, policy: UpstreamPolicy, logger: Logger) {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: TimeAmount(policy.connectTimeout), read: TimeAmount(policy.readTimeout))
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.url = baseURL.trimmingSuffix("/") + "/api/v1/app/result"
        self.policy = policy
        self.logger = logger
    }

    func run() async throws {
        try? await gracefulShutdown()
        try await self.shutdown()
    }

    func shutdown() async throws {
        try await self.http.shutdown()
    }

    /// The result for `id` (already validated: 64 hex characters, or a DOB hash).
    func result(for id: String) async throws(TestResultUnavailable) -> UpstreamTestResult {
        var generator = SystemRandomNumberGenerator()
        var backoff = self.policy.backoff
        var attempt = 0
        while true {
            attempt += 1
            let failure: String
            do {
                return try await self.attempt(id)
            } catch let error as RetryableFailure {
                failure = error.reason
            } catch let error as TestResultUnavailable {
                throw error
            } catch {
                // Cancellation of the request (client disconnected): no retry.
                throw TestResultUnavailable(description: "the call was cancelled")
            }
            guard attempt <= self.policy.retries, !Task.isCancelled else {
                self.logger.warning("test-result-service unavailable", metadata: ["upstream.failure": "\(failure)", "upstream.attempts": "\(attempt)"])
                throw TestResultUnavailable(description: failure)
            }
            let wait = backoff * Double.random(in: 0...1, using: &generator)
            backoff = backoff * 2
            do { try await Task.sleep(for: wait) } catch { throw TestResultUnavailable(description: "the call was cancelled") }
        }
    }

    private struct RetryableFailure: Error {
        var reason: String
    }

    private func attempt(_ id: String) async throws -> UpstreamTestResult {
        var request = HTTPClientRequest(url: self.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"id":"\#(id)"}"#))
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await self.http.execute(request, timeout: TimeAmount(self.policy.connectTimeout + self.policy.readTimeout))
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch let error as HTTPClientError where error == .cancelled {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw RetryableFailure(reason: "transport: \(String(reflecting: type(of: error)))")
        }
        switch response.status.code {
        case 200:
            guard let result = try? JSONDecoder().decode(UpstreamTestResult.self, from: Data(body.readableBytesView)),
                (0...9).contains(result.testResult), (result.labId?.unicodeScalars.count ?? 0) <= 64
            else {
                throw TestResultUnavailable(description: "test-result-service sent an unreadable result")
            }
            return result
        case 500...599:
            throw RetryableFailure(reason: "status \(response.status.code)")
        default:
            throw TestResultUnavailable(description: "test-result-service answered \(response.status.code)")
        }
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        var text = self
        while text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }
}
