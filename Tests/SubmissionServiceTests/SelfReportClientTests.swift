// The OTP client against a stand-in data-donation-service on a socket: what each answer means, which failures are
// repeated, and what the request carries.

import AsyncHTTPClient
import ENCrypto
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import InMemoryLogging
import Logging
import NIOCore
import Testing

@testable import SubmissionService

@Suite("Self-report OTP client")
struct SelfReportClientTests {
    static let otp = "7b9c6a52-0d7e-4f3a-9c1e-2f5b8d4a6e10"
    static let attempt = UUID(uuidString: "0d6f4f8e-7a51-4c1e-9b3e-2f8a6c5d4e3b")!

    /// What the stand-in received: each request's body and service token.
    struct Received: Sendable {
        var body: String
        var token: String
    }

    /// Runs `body` with a client whose peer answers every `srs` call with `status` and `json`, and records the calls.
    static func withPeer(
        status: HTTPResponse.Status,
        json: String? = nil,
        logs: InMemoryLogHandler = InMemoryLogHandler(),
        _ body: @Sendable (HTTPSelfReportClient, Mutexed<[Received]>) async throws -> Void
    ) async throws {
        let calls = Mutexed<[Received]>([])
        let router = Router()
        router.post("version/v1/srs") { request, context -> Response in
            let text = String(buffer: try await request.body.collect(upTo: 4096))
            calls.withLock { $0.append(Received(body: text, token: request.headers[.cwaServiceToken] ?? "")) }
            guard let json else { return Response(status: status) }
            return Response(
                status: status,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: json))
            )
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await LiveServer.run(app) { port in
            var policy = UpstreamPolicy()
            policy.backoff = .milliseconds(1)
            let client = HTTPSelfReportClient(
                baseURL: "http://127.0.0.1:\(port)/",
                policy: policy,
                serviceToken: TestServiceKeys.signer("submission-service"),
                logger: {
                    // Every level, so that a test that looks for a secret in the logs sees all they hold.
                    var logger = Logger(label: "test", factory: { _ in logs })
                    logger.logLevel = .trace
                    return logger
                }()
            )
            try await withCleanup {
                try await body(client, calls)
            } cleanup: {
                try await client.shutdown()
            }
        }
    }

    static func answer(_ state: String) -> String {
        #"{"otp":"\#(Self.otp)","state":"\#(state)","strongClientIntegrityCheck":true}"#
    }

    @Test(
        "200 with state valid redeems; the body is {\"otp\": …} and the call carries a token for data-donation-service"
    )
    func valid() async throws {
        let logs = InMemoryLogHandler()
        try await Self.withPeer(status: .ok, json: Self.answer("valid"), logs: logs) { client, calls async throws in
            #expect(try await client.redeem(Self.otp, attempt: Self.attempt) == .valid)
            let call = try #require(calls.withLock { $0 }.first)
            #expect(call.body == #"{"otp":"\#(Self.otp)","submission":"\#(Self.attempt.uuidString.lowercased())"}"#)
            let verifier = ServiceTokenVerifier(
                audience: "data-donation-service",
                callers: [
                    "submission-service": try #require(
                        ServiceTokenVerifier.publicKeys(
                            pem: TestServiceKeys.signer("submission-service").publicKeyPEM
                        )
                    )
                ]
            )
            #expect(try verifier.verify(call.token, now: Date()) == "submission-service")
        }
        // The call was logged (so the check below looks at something), and the OTP is in no entry.
        #expect(logs.entries.contains { $0.level == .debug && $0.message == "data-donation-service answered" })
        #expect(!logs.entries.contains { "\($0.message) \($0.metadata)".contains(Self.otp) })
    }

    @Test("200 with state expired or redeemed is refused", arguments: ["expired", "redeemed"])
    func refusedStates(_ state: String) async throws {
        try await Self.withPeer(status: .ok, json: Self.answer(state)) { client, _ async throws in
            #expect(try await client.redeem(Self.otp, attempt: Self.attempt) == .rejected)
        }
    }

    @Test("404 and 400 mean the OTP is refused", arguments: [HTTPResponse.Status.notFound, .badRequest])
    func refused(_ status: HTTPResponse.Status) async throws {
        try await Self.withPeer(status: status) { client, calls async throws in
            #expect(try await client.redeem(Self.otp, attempt: Self.attempt) == .rejected)
            #expect(calls.withLock { $0.count } == 1)
        }
    }

    @Test("a 2xx without a readable state is a broken contract, not a redeemed OTP")
    func unreadable() async throws {
        try await Self.withPeer(status: .ok) { client, _ async throws in
            await #expect(throws: UpstreamUnavailable.self) { try await client.redeem(Self.otp, attempt: Self.attempt) }
        }
        try await Self.withPeer(status: .ok, json: #"{"otp":"x"}"#) { client, _ async throws in
            await #expect(throws: UpstreamUnavailable.self) { try await client.redeem(Self.otp, attempt: Self.attempt) }
        }
    }

    @Test(
        "a 5xx answer is repeated: the call names its attempt, which data-donation-service answers as the first time"
    )
    func serverErrorRepeated() async throws {
        try await Self.withPeer(status: .internalServerError) { client, calls async throws in
            await #expect(throws: UpstreamUnavailable.self) { try await client.redeem(Self.otp, attempt: Self.attempt) }
            #expect(calls.withLock { $0.count } == 1 + UpstreamPolicy().retries)
        }
    }

    @Test("401 or 403 (data-donation-service refused this service) is unavailable, and logged as a refusal")
    func serviceRefused() async throws {
        let logs = InMemoryLogHandler()
        try await Self.withPeer(status: .forbidden, logs: logs) { client, _ async throws in
            await #expect(throws: UpstreamUnavailable.self) { try await client.redeem(Self.otp, attempt: Self.attempt) }
        }
        #expect(logs.entries.contains { $0.message == "data-donation-service refused the call" })
    }

    @Test("a refused connection is repeated, then reported as unavailable")
    func connectionRefused() async throws {
        var policy = UpstreamPolicy()
        policy.backoff = .milliseconds(1)
        policy.connectTimeout = .milliseconds(200)
        let client = HTTPSelfReportClient(
            baseURL: "http://127.0.0.1:9",
            policy: policy,
            serviceToken: TestServiceKeys.signer("submission-service"),
            logger: Logger(label: "test")
        )
        await #expect(throws: UpstreamUnavailable.self) { try await client.redeem(Self.otp, attempt: Self.attempt) }
        try await client.shutdown()
    }
}
