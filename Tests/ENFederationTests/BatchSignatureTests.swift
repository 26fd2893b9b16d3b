// Batch signatures: ours verify with our verifier and with openssl, for ECDSA and RSA; a signature over other
// bytes, from an unknown signer or an expired certificate is refused.

import ENModels
import ENTestSupport
import Foundation
import Testing
import X509

@testable import ENFederation

@Suite("Batch signatures")
struct BatchSignatureTests {
    static let bytes = BatchSignatureBytes.batch(
        of: [BatchSignatureBytesTests.first, BatchSignatureBytesTests.second, BatchSignatureBytesTests.third]
    )

    @Test(
        "a signature verifies against its certificate as anchor",
        arguments: [TestSigningCertificate.Algorithm.p256, .rsa2048]
    )
    func roundTrip(algorithm: TestSigningCertificate.Algorithm) async throws {
        let identity = try TestSigningCertificate.make(country: "DE", algorithm: algorithm)
        let signer = try BatchSigner(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        let signature = try signer.sign(Self.bytes, at: Date())
        let verifier = BatchSignatureVerifier(anchors: [identity.certificate])
        let signerCertificate = try await verifier.verify(signature: signature, batchBytes: Self.bytes, at: Date())
            .get()
        #expect(signerCertificate == identity.certificate)
        #expect(signerCertificate.countryCode == "DE")
    }

    @Test("a signature over other bytes, by another certificate, or outside the validity is refused")
    func refusals() async throws {
        let identity = try TestSigningCertificate.make(country: "DE")
        let other = try TestSigningCertificate.make(country: "DE")
        let signer = try BatchSigner(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        let signature = try signer.sign(Self.bytes, at: Date())
        let verifier = BatchSignatureVerifier(anchors: [identity.certificate])

        var tampered = Self.bytes
        tampered[3] ^= 0x01
        #expect(
            await verifier.verify(signature: signature, batchBytes: tampered, at: Date())
                == .failure(.invalid("Message digest mismatch"))
        )
        #expect(
            await BatchSignatureVerifier(anchors: [other.certificate])
                .verify(signature: signature, batchBytes: Self.bytes, at: Date()) == .failure(.untrustedSigner)
        )
        #expect(
            await verifier.verify(
                signature: signature,
                batchBytes: Self.bytes,
                at: Date().addingTimeInterval(2 * 86_400)
            )
                == .failure(.untrustedSigner)
        )
        #expect(
            await verifier.verify(signature: "not base64!", batchBytes: Self.bytes, at: Date()) == .failure(.notBase64)
        )
        guard case .failure(.invalid) = await verifier.verify(signature: "AAAA", batchBytes: Self.bytes, at: Date())
        else {
            Issue.record("garbage DER was not refused as invalid")
            return
        }
        #expect(
            await BatchSignatureVerifier(anchors: []).verify(signature: signature, batchBytes: Self.bytes, at: Date())
                == .failure(.noTrustAnchors)
        )
    }

    @Test("a signing certificate issued by an anchor CA verifies; the CA's country is not the signer's")
    func issuedByAnchor() async throws {
        let ca = try TestSigningCertificate.make(
            country: "FR",
            commonName: "FR federation CA",
            isCertificateAuthority: true
        )
        let identity = try TestSigningCertificate.make(country: "FR", issuer: ca)
        let signer = try BatchSigner(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        let signature = try signer.sign(Self.bytes, at: Date())
        let result = await BatchSignatureVerifier(anchors: [ca.certificate])
            .verify(signature: signature, batchBytes: Self.bytes, at: Date())
        #expect(try result.get() == identity.certificate)
    }

    @Test("a key that is not the certificate's is refused when loading")
    func mismatchedKey() throws {
        let identity = try TestSigningCertificate.make(country: "DE")
        let other = try TestSigningCertificate.make(country: "DE")
        #expect(throws: BatchSignerError.keyDoesNotMatchCertificate) {
            try BatchSigner(certificatePEM: identity.certificatePEM, privateKeyPEM: other.privateKeyPEM)
        }
        #expect(throws: BatchSignerError.unreadableCertificate) {
            try BatchSigner(certificatePEM: "nonsense", privateKeyPEM: other.privateKeyPEM)
        }
    }

    @Test(
        "openssl cms -verify accepts our detached signature and refuses it over tampered bytes",
        arguments: [TestSigningCertificate.Algorithm.p256, .rsa2048]
    )
    func opensslVerifies(algorithm: TestSigningCertificate.Algorithm) throws {
        let openssl = "/usr/bin/openssl"
        try #require(
            FileManager.default.isExecutableFile(atPath: openssl),
            "openssl is needed for the independent check"
        )
        let identity = try TestSigningCertificate.make(country: "DE", algorithm: algorithm)
        let signer = try BatchSigner(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        let signature = try #require(Data(base64Encoded: try signer.sign(Self.bytes, at: Date())))

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cms-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try signature.write(to: folder.appendingPathComponent("batch.sig.der"))
        try Data(identity.certificatePEM.utf8).write(to: folder.appendingPathComponent("signing.pem"))
        try Data(Self.bytes).write(to: folder.appendingPathComponent("batch.bin"))
        var tampered = Self.bytes
        tampered[tampered.count - 2] ^= 0x01
        try Data(tampered).write(to: folder.appendingPathComponent("tampered.bin"))

        func verify(_ content: String) throws -> (status: Int32, output: String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: openssl)
            process.currentDirectoryURL = folder
            process.arguments = [
                "cms", "-verify", "-binary", "-inform", "DER", "-in", "batch.sig.der", "-content", content,
                "-CAfile", "signing.pem", "-purpose", "any", "-out", "/dev/null",
            ]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, output)
        }
        let good = try verify("batch.bin")
        #expect(good.status == 0, "\(good.output)")
        #expect(good.output.contains("Verification successful"))
        let bad = try verify("tampered.bin")
        #expect(bad.status != 0)
        #expect(bad.output.contains("Verification failure"))
    }
}
