// The NHS answer signature on a router (nhs §2): every status signed but 403, bound to the request.

import Crypto
import ENCrypto
import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@Suite("NHS signing middleware")
struct NHSSigningMiddlewareTests {
    static let key = P256.Signing.PrivateKey()
    static let date = Date(timeIntervalSince1970: 1_596_363_524)

    static func app() -> some ApplicationProtocol {
        let router = Router()
        router.add(middleware: ErrorMiddleware())
        let signed = router.group("signed")
            .add(
                middleware: NHSSigningMiddleware(
                    signer: NHSSigner(keys: [.init(id: "key-1", key: Self.key)]),
                    clock: WallClock { Self.date }
                )
            )
        signed.post("ok") { _, _ in Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: #"{"a":1}"#))) }
        signed.post("empty") { _, _ in Response(status: .noContent) }
        signed.post("missing") { _, _ -> Response in throw APIError(.notFound, "no such test") }
        signed.post("invalid") { _, _ -> Response in throw APIError(.unprocessableContent, "validation error: x") }
        signed.post("forbidden") { _, _ -> Response in throw APIError(.forbidden, "no key") }
        router.post("plain") { _, _ in Response(status: .ok) }
        return Application(router: router)
    }

    /// Whether `response` carries a valid signature over `Request-Id:POST:path:date:` and its body.
    static func verified(_ response: TestResponse, path: String, requestID: String?) throws -> Bool {
        let header = try #require(response.headers[.amzMetaSignature])
        #expect(response.headers[.amzMetaSignatureDate] == "Sun, 02 Aug 2020 10:18:44 UTC")
        let (id, der) = try #require(NHSSigner.parse(header))
        #expect(id == "key-1")
        let bytes = NHSSigner.answerBytes(
            requestID: requestID,
            method: "POST",
            path: path,
            date: "Sun, 02 Aug 2020 10:18:44 UTC",
            body: response.body.readableBytesView
        )
        return Self.key.publicKey.isValidSignature(
            try P256.Signing.ECDSASignature(derRepresentation: der),
            for: SHA256.hash(data: bytes)
        )
    }

    @Test("200, 204, 404 and 422 are signed over the request's id, method, path (no query) and body")
    func signedStatuses() async throws {
        try await Self.app().test(.router) { client in
            for (path, status) in [
                ("/signed/ok", HTTPResponse.Status.ok), ("/signed/empty", .noContent), ("/signed/missing", .notFound),
                ("/signed/invalid", .unprocessableContent),
            ] {
                let response = try await client.execute(
                    uri: path + "?ignored=1",
                    method: .post,
                    headers: [.nhsRequestID: "request-7"]
                )
                #expect(response.status == status)
                #expect(try Self.verified(response, path: path, requestID: "request-7"), "\(path)")
                #expect(try !Self.verified(response, path: path, requestID: "another"), "bound to the request id")
            }
            let noID = try await client.execute(uri: "/signed/ok", method: .post)
            #expect(try Self.verified(noID, path: "/signed/ok", requestID: nil), "signed as not-set")
        }
    }

    @Test("403 and routes outside the group are not signed")
    func unsigned() async throws {
        try await Self.app().test(.router) { client in
            let forbidden = try await client.execute(uri: "/signed/forbidden", method: .post)
            #expect(forbidden.status == .forbidden)
            #expect(forbidden.headers[.amzMetaSignature] == nil)
            let plain = try await client.execute(uri: "/plain", method: .post)
            #expect(plain.status == .ok)
            #expect(plain.headers[.amzMetaSignature] == nil)
        }
    }
}

@Suite("NHS_SIGNING_KEYS")
struct NHSSigningKeysSettingTests {
    static func file(_ text: String) -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nhs-key-\(UUID()).pem").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    @Test("the first key signs; every id is kept; a bad file, a repeated id or a missing value is reported")
    func parses() throws {
        let first = P256.Signing.PrivateKey()
        let second = P256.Signing.PrivateKey()
        let settings = SettingsReader(values: [
            "NHS_SIGNING_KEYS":
                "key-2=\(Self.file(first.pemRepresentation)),key-1=\(Self.file(second.pemRepresentation))"
        ])
        let signer = try #require(settings.nhsSigner(required: true))
        #expect(signer.keys.map(\.id) == ["key-2", "key-1"])
        #expect(signer.current.key.publicKey.rawRepresentation == first.publicKey.rawRepresentation)
        #expect(settings.problems.isEmpty)

        let bad = SettingsReader(values: [
            "NHS_SIGNING_KEYS":
                "a=\(Self.file("not a key")),a=\(Self.file(first.pemRepresentation)),a=\(Self.file(first.pemRepresentation))"
        ])
        _ = bad.nhsSigner(required: true)
        #expect(bad.problems.count == 2, "\(bad.problems)")

        let missing = SettingsReader(values: [:])
        #expect(missing.nhsSigner(required: false) == nil)
        #expect(missing.problems.isEmpty)
        _ = missing.nhsSigner(required: true)
        #expect(missing.problems.count == 1)
    }
}
