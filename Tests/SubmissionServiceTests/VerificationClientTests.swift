// The TAN client against a stand-in verification-service on a socket: what each answer means, and which
// failures are repeated.

import AsyncHTTPClient
import ENCrypto
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import InMemoryLogging
import Logging
import Testing

@testable import SubmissionService

@Suite("Verification client")
struct VerificationClientTests {
    /// Runs `body` with a client whose peer answers every `tan/verify` with `status` and `headers`, and counts calls.
    static func withPeer(
        status: HTTPResponse.Status,
        headers: HTTPFields = [:],
        _ body: @Sendable (HTTPVerificationClient, Mutexed<Int>) async throws -> Void
    ) async throws {
        let calls = Mutexed(0)
        let router = Router()
        router.post("version/v1/tan/verify") { _, _ -> Response in
            calls.withLock { $0 += 1 }
            return Response(status: status, headers: headers)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await LiveServer.run(app) { port in
            var policy = UpstreamPolicy()
            policy.backoff = .milliseconds(1)
            let client = HTTPVerificationClient(
                baseURL: "http://127.0.0.1:\(port)/",
                policy: policy,
                serviceToken: TestServiceKeys.signer("submission-service"),
                logger: Logger(label: "test")
            )
            try await withCleanup {
                try await body(client, calls)
            } cleanup: {
                try await client.shutdown()
            }
        }
    }

    static let tan = "3d7f1d8f-8f0e-4a43-9f0f-6d3c2b8c1a11"
    static let attempt = UUID(uuidString: "0d6f4f8e-7a51-4c1e-9b3e-2f8a6c5d4e3b")!

    @Test("every call carries submission's service token for verification; a refusal of it is logged and unavailable")
    func serviceToken() async throws {
        let received = Mutexed<[String]>([])
        let router = Router()
        router.post("version/v1/tan/verify") { request, _ -> Response in
            received.withLock { $0.append(request.headers[.cwaServiceToken] ?? "") }
            return Response(
                status: .forbidden,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"error":"submission-service may not call this"}"#))
            )
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        let logs = InMemoryLogHandler()
        try await LiveServer.run(app) { port in
            let client = HTTPVerificationClient(
                baseURL: "http://127.0.0.1:\(port)",
                policy: UpstreamPolicy(),
                serviceToken: TestServiceKeys.signer("submission-service"),
                logger: Logger(label: "test", factory: { _ in logs })
            )
            _ = try await withCleanup {
                await #expect(throws: UpstreamUnavailable.self) {
                    try await client.verify(Self.tan, event: false, attempt: Self.attempt)
                }
            } cleanup: {
                try await client.shutdown()
            }
        }
        let token = try #require(received.withLock { $0 }.first)
        let verifier = ServiceTokenVerifier(
            audience: "verification-service",
            callers: [
                "submission-service": try #require(
                    ServiceTokenVerifier.publicKeys(pem: TestServiceKeys.signer("submission-service").publicKeyPEM)
                )
            ]
        )
        #expect(try verifier.verify(token, now: Date()) == "submission-service")
        let refusal = try #require(logs.entries.first { $0.message == "verification-service refused the call" })
        #expect(refusal.level == .warning)
        #expect(refusal.metadata["upstream.status"] == "403")
        #expect("\(refusal.metadata["upstream.error"] ?? "")".contains("may not call this"))
        #expect(!logs.entries.contains { "\($0.message) \($0.metadata)".contains(token) })
    }

    @Test("the body is JSON of the TAN, its kind and the attempt, whatever characters the TAN holds")
    func bodyIsJSON() async throws {
        struct Body: Decodable, Equatable {
            var tan: String
            var event: Bool
            var submission: String
        }
        let received = Mutexed<[Body]>([])
        let router = Router()
        router.post("version/v1/tan/verify") { request, context -> Response in
            let body = try await request.decode(as: Body.self, context: context)
            received.withLock { $0.append(body) }
            return Response(status: .ok)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        let tan = #"a"b\c","event":false"#
        try await LiveServer.run(app) { port in
            let client = HTTPVerificationClient(
                baseURL: "http://127.0.0.1:\(port)",
                policy: UpstreamPolicy(),
                serviceToken: TestServiceKeys.signer("submission-service"),
                logger: Logger(label: "test")
            )
            _ = try await withCleanup {
                try await client.verify(tan, event: true, attempt: Self.attempt)
            } cleanup: {
                try await client.shutdown()
            }
        }
        #expect(
            received.withLock { $0 } == [Body(tan: tan, event: true, submission: Self.attempt.uuidString.lowercased())]
        )
    }

    @Test("200 is valid; the teleTAN type header is read case-insensitively")
    func valid() async throws {
        try await Self.withPeer(status: .ok, headers: [HTTPField.Name("X-CWA-TELETAN-TYPE")!: "event"]) {
            client,
            _ async throws in
            let verdict = try await client.verify(Self.tan, event: false, attempt: Self.attempt)
            #expect(verdict == .valid(teleTANType: "event"))
            #expect(verdict.isEventTAN)
        }
        try await Self.withPeer(status: .ok) { client, _ async throws in
            #expect(try await client.verify(Self.tan, event: false, attempt: Self.attempt).isEventTAN == false)
        }
    }

    @Test("404 and 400 mean the TAN is refused", arguments: [HTTPResponse.Status.notFound, .badRequest])
    func refused(_ status: HTTPResponse.Status) async throws {
        try await Self.withPeer(status: status) { client, calls async throws in
            #expect(try await client.verify(Self.tan, event: false, attempt: Self.attempt) == .rejected)
            #expect(calls.withLock { $0 } == 1)
        }
    }

    @Test(
        "a 5xx answer is repeated: the call names its attempt, which verification-service answers as the first time"
    )
    func serverErrorRepeated() async throws {
        try await Self.withPeer(status: .internalServerError) { client, calls async throws in
            await #expect(throws: UpstreamUnavailable.self) {
                try await client.verify(Self.tan, event: false, attempt: Self.attempt)
            }
            #expect(calls.withLock { $0 } == 1 + UpstreamPolicy().retries)
        }
    }

    @Test("410 names the attempt that used the TAN; without the header, an attempt that named none")
    func spentByAnother() async throws {
        let other = UUID()
        try await Self.withPeer(
            status: .gone,
            headers: [Redemption.redeemedByHeader: other.uuidString.lowercased()]
        ) { client, _ async throws in
            #expect(try await client.verify(Self.tan, event: false, attempt: Self.attempt) == .spentBy(other))
        }
        try await Self.withPeer(status: .gone) { client, _ async throws in
            #expect(try await client.verify(Self.tan, event: false, attempt: Self.attempt) == .spentBy(nil))
        }
    }

    @Test("another client error is a contract problem, not a refused TAN")
    func unexpectedStatus() async throws {
        try await Self.withPeer(status: .unauthorized) { client, _ async throws in
            await #expect(throws: UpstreamUnavailable.self) {
                try await client.verify(Self.tan, event: false, attempt: Self.attempt)
            }
        }
    }

    @Test("a refused connection is repeated, then reported")
    func connectionRefused() async throws {
        var policy = UpstreamPolicy()
        policy.backoff = .milliseconds(1)
        policy.connectTimeout = .milliseconds(200)
        let client = HTTPVerificationClient(
            baseURL: "http://127.0.0.1:9",
            policy: policy,
            serviceToken: TestServiceKeys.signer("submission-service"),
            logger: Logger(label: "test")
        )
        await #expect(throws: UpstreamUnavailable.self) {
            try await client.verify(Self.tan, event: false, attempt: Self.attempt)
        }
        try await client.shutdown()
        #expect(UpstreamClient.isConnectFailure(HTTPClientError.connectTimeout))
        #expect(UpstreamClient.isConnectFailure(HTTPClientError.getConnectionFromPoolTimeout), "never sent: retried")
        #expect(!UpstreamClient.isConnectFailure(HTTPClientError.readTimeout))
    }
}
