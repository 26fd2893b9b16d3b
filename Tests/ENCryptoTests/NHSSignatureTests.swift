// NHS answer and file signatures (nhs §2): the signed bytes of the reference's vector, the date format, and
// signatures that openssl verifies.

import Crypto
import ENCrypto
import ENTestSupport
import Foundation
import Testing

@Suite("NHS signatures")
struct NHSSignatureTests {
    /// 2020-08-02T10:18:44Z, the reference's test date.
    static let date = Date(timeIntervalSince1970: 1_596_363_524)

    @Test("the date reads as the reference's: English names, UTC")
    func dateFormat() {
        #expect(NHSSigner.dateText(Self.date) == "Sun, 02 Aug 2020 10:18:44 UTC")
        #expect(NHSSigner.dateText(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 UTC")
    }

    @Test("the signed bytes of the reference's vector; no Request-Id signs not-set")
    func vector() {
        let bytes = NHSSigner.answerBytes(
            requestID: "client-request-id",
            method: "POST",
            path: "/some/path",
            date: "Sun, 02 Aug 2020 10:18:44 UTC",
            body: Array(#"{"foo":"bar"}"#.utf8)
        )
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == #"client-request-id:POST:/some/path:Sun, 02 Aug 2020 10:18:44 UTC:{"foo":"bar"}"#
        )
        let unset = NHSSigner.answerBytes(requestID: nil, method: "GET", path: "/p", date: "d", body: [UInt8]())
        #expect(String(decoding: unset, as: UTF8.self) == "not-set:GET:/p:d:")
    }

    @Test("an answer's signature verifies over those bytes with the key its id names, and not over others")
    func verifies() throws {
        let key = P256.Signing.PrivateKey()
        let signer = NHSSigner(keys: [.init(id: "key-2", key: key), .init(id: "key-1", key: P256.Signing.PrivateKey())])
        let headers = try signer.signAnswer(
            requestID: "client-request-id",
            method: "POST",
            path: "/some/path",
            body: Array(#"{"foo":"bar"}"#.utf8),
            at: Self.date
        )
        #expect(headers.date == "Sun, 02 Aug 2020 10:18:44 UTC")
        let (id, der) = try #require(NHSSigner.parse(headers.signature))
        #expect(id == "key-2")
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        let signed = Data(#"client-request-id:POST:/some/path:Sun, 02 Aug 2020 10:18:44 UTC:{"foo":"bar"}"#.utf8)
        #expect(key.publicKey.isValidSignature(signature, for: SHA256.hash(data: signed)))
        #expect(!key.publicKey.isValidSignature(signature, for: SHA256.hash(data: signed + Data(" ".utf8))))
    }

    @Test("openssl dgst -sha256 -verify accepts an answer's and a file's signature")
    func openssl() throws {
        let key = P256.Signing.PrivateKey()
        let signer = NHSSigner(keys: [.init(id: "k", key: key)])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nhs-signature-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(key.publicKey.pemRepresentation.utf8).write(to: directory.appendingPathComponent("public.pem"))

        let answer = try signer.signAnswer(
            requestID: "r-1",
            method: "POST",
            path: "/virology-test/v2/order",
            body: Array(#"{"a":1}"#.utf8),
            at: Self.date
        )
        let file = try signer.signFile(Array("the file".utf8), at: Self.date)
        for (headers, signed) in [
            (answer, "r-1:POST:/virology-test/v2/order:Sun, 02 Aug 2020 10:18:44 UTC:{\"a\":1}"),
            (file, "Sun, 02 Aug 2020 10:18:44 UTC:the file"),
        ] {
            let (_, der) = try #require(NHSSigner.parse(headers.signature))
            try der.write(to: directory.appendingPathComponent("signature.der"))
            try Data(signed.utf8).write(to: directory.appendingPathComponent("signed.bin"))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "openssl", "dgst", "-sha256", "-verify", directory.appendingPathComponent("public.pem").path,
                "-signature", directory.appendingPathComponent("signature.der").path,
                directory.appendingPathComponent("signed.bin").path,
            ]
            let (status, text) = try OpenSSL.withOutputFile { output in
                process.standardOutput = output
                process.standardError = output
                try process.run()
                process.waitUntilExit()
                return process.terminationStatus
            }
            #expect(status == 0)
            #expect(text.contains("Verified OK"), "\(text)")
        }
    }
}
