// Bad input gets a clear 4xx before any database work (ARCHITECTURE §5): the database here is shut down, so any
// query would fail with a 500.

import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PostgresNIO
import Testing

@testable import VerificationService

@Suite("Request validation without a database")
struct RequestValidationTests {
    /// Both routers over a pool that has been shut down: every query fails at once.
    private func withDeadDatabase(
        _ body:
            @Sendable (
                _ external: ServiceApplication<ServiceRequestContext>,
                _ internal: ServiceApplication<InternalRequestContext>
            ) async throws -> Void
    ) async throws {
        let configuration = try VerificationFixture.configuration()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let client = configuration.database.makeClient(logger: logger)
        let running = Task { await client.run() }
        running.cancel()
        _ = await running.value
        let runtime = VerificationFixture.runtime(client: client, configuration: configuration, logger: logger)
        let dependencies = runtime.dependencies
        do {
            try await body(
                Application(router: try Verification.buildPublicRouter(runtime)),
                Application(router: try Verification.buildInternalRouter(runtime))
            )
        } catch {
            try await dependencies.shutdown()
            throw error
        }
        try await dependencies.shutdown()
    }

    private func post(
        _ app: some ApplicationProtocol,
        _ uri: String,
        _ body: String,
        headers: HTTPFields = .json
    ) async throws -> (HTTPResponse.Status, String) {
        try await app.test(.router) { client in
            let response = try await client.execute(
                uri: uri,
                method: .post,
                headers: TestServiceKeys.verificationCaller(headers, uri: uri),
                body: ByteBuffer(string: body)
            )
            return (response.status, response.body.text)
        }
    }

    @Test(
        "malformed registrations are 400 with a message naming the field",
        arguments: [
            (#"{"key":"#, "body is not valid JSON"),
            (#"{"keyType":"GUID"}"#, "key is required"),
            (#"{"key":5,"keyType":"GUID"}"#, "key: expected a string"),
            (#"{"key":"\#(String(repeating: "a", count: 64))","keyType":"QR"}"#, "keyType"),
            (#"{"key":"\#(String(repeating: "g", count: 64))","keyType":"GUID"}"#, "key:"),
            (#"{"key":"\#(String(repeating: "a", count: 63))","keyType":"GUID"}"#, "key:"),
            (
                #"{"key":"\#(String(repeating: "a", count: 64))","keyType":"GUID","keyDob":"y\#(String(repeating: "a", count: 63))"}"#,
                "keyDob"
            ),
            (#"{"key":"ABCDEFGHJK","keyType":"TELETAN"}"#, "teleTAN"),
            (#"{"key":"\#(String(repeating: "a", count: 64))","keyType":"TELETAN"}"#, "teleTAN"),
        ]
    )
    func malformedRegistration(body: String, message: String) async throws {
        try await self.withDeadDatabase { external, _ in
            let (status, text) = try await self.post(external, "/version/v1/registrationToken", body)
            #expect(status == .badRequest)
            #expect(text.contains(message), "\(text)")
        }
    }

    @Test("a teleTAN with any one character changed is 400 without a query; the original reaches the database")
    func teleTANCheckCharacter() async throws {
        var generator = SeededGenerator(seed: 7)
        let teleTAN = Array(TeleTAN.generate(using: &generator).value)
        try await self.withDeadDatabase { external, _ in
            for position in teleTAN.indices {
                for replacement in TeleTAN.alphabet.map({ Character(UnicodeScalar($0)) })
                where replacement != teleTAN[position] {
                    var changed = teleTAN
                    changed[position] = replacement
                    guard TeleTAN(validating: String(changed)) == nil else { continue }  // another valid teleTAN
                    let (status, _) = try await self.post(
                        external,
                        "/version/v1/registrationToken",
                        VerificationBodies.teleTANRegistration(String(changed))
                    )
                    #expect(status == .badRequest, "position \(position)")
                }
            }
            // The control: the unchanged teleTAN passes validation and fails only at the (dead) database, which is an
            // outage (503), not a bug.
            let (status, _) = try await self.post(
                external,
                "/version/v1/registrationToken",
                VerificationBodies.teleTANRegistration(String(teleTAN))
            )
            #expect(status == .serviceUnavailable)
        }
    }

    @Test("malformed tokens and TANs are 400 on every endpoint; wrong media type 415; oversized bodies 413")
    func otherEndpoints() async throws {
        try await self.withDeadDatabase { external, internalApp async throws in
            let upper = RandomUUID.generate().uppercased()
            let version1 = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
            for uri in ["/version/v1/testresult", "/version/v1/tan"] {
                #expect(try await self.post(external, uri, VerificationBodies.token(upper)).0 == .badRequest)
                #expect(try await self.post(external, uri, VerificationBodies.token(version1)).0 == .badRequest)
                #expect(try await self.post(external, uri, "[]").0 == .badRequest)
                #expect(
                    try await self.post(
                        external,
                        uri,
                        VerificationBodies.token(RandomUUID.generate()),
                        headers: [.contentType: "text/plain"]
                    ).0 == .unsupportedMediaType
                )
            }
            #expect(
                try await self.post(internalApp, "/version/v1/tan/verify", VerificationBodies.tan("ABCDEFGHJK")).0
                    == .badRequest
            )
            #expect(
                try await self.post(internalApp, "/version/v1/testresult", VerificationBodies.token(upper)).0
                    == .badRequest
            )
            let oversized = #"{"key":""# + String(repeating: "a", count: 10_001) + #"","keyType":"GUID"}"#
            #expect(try await self.post(external, "/version/v1/registrationToken", oversized).0 == .contentTooLarge)
            // A declared length over the limit is refused before any body byte is read (none is sent here).
            let declared: HTTPFields = [.contentType: "application/json", .contentLength: "10001"]
            let declaredStatus = try await external.test(.router) { client in
                try await client.execute(uri: "/version/v1/registrationToken", method: .post, headers: declared).status
            }
            #expect(declaredStatus == .contentTooLarge)
        }
    }
}
