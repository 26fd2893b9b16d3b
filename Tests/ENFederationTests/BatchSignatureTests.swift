// Batch signatures: ours verify with our verifier and with openssl, for ECDSA and RSA; the signatures `openssl cms
// -sign` writes (RSA PKCS#1 v1.5 named `rsaEncryption`, RSASSA-PSS, ECDSA, without signed attributes, by subject key
// identifier, streamed BER) verify with ours; a signature over other bytes, from an unknown signer, an expired
// certificate, or a signer of another country than its anchor's is refused.

import ENModels
import ENTestSupport
import Foundation
import SwiftASN1
import Testing
import X509

@testable import ENFederation

@Suite("Batch signatures")
struct BatchSignatureTests {
    static let bytes = BatchSignatureBytes.batch(
        of: [BatchSignatureBytesTests.first, BatchSignatureBytesTests.second, BatchSignatureBytesTests.third]
    )

    /// A verifier that trusts each certificate for the country of its subject.
    static func verifier(_ anchors: TestSigningCertificate...) -> BatchSignatureVerifier {
        BatchSignatureVerifier(anchors: BatchTrustAnchor.registeredBySubject(anchors.map(\.certificate)) ?? [])
    }

    @Test(
        "a signature verifies against its certificate as anchor",
        arguments: TestSigningCertificate.Algorithm.allCases
    )
    func roundTrip(algorithm: TestSigningCertificate.Algorithm) async throws {
        let identity = try TestSigningCertificate.make(country: "DE", algorithm: algorithm)
        let signer = try BatchSigner(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        let signature = try signer.sign(Self.bytes, at: Date())
        let signerCertificate = try await Self.verifier(identity)
            .verify(signature: signature, batchBytes: Self.bytes, country: "DE", at: Date())
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
        let verifier = Self.verifier(identity)

        var tampered = Self.bytes
        tampered[3] ^= 0x01
        #expect(
            await verifier.verify(signature: signature, batchBytes: tampered, country: "DE", at: Date())
                == .failure(.invalid("Message digest mismatch"))
        )
        #expect(
            await Self.verifier(other)
                .verify(signature: signature, batchBytes: Self.bytes, country: "DE", at: Date())
                == .failure(.untrustedSigner)
        )
        #expect(
            await verifier.verify(
                signature: signature,
                batchBytes: Self.bytes,
                country: "DE",
                at: Date().addingTimeInterval(2 * 86_400)
            )
                == .failure(.untrustedSigner)
        )
        #expect(
            await verifier.verify(signature: "not base64!", batchBytes: Self.bytes, country: "DE", at: Date())
                == .failure(.notBase64)
        )
        guard
            case .failure(.invalid) = await verifier.verify(
                signature: "AAAA",
                batchBytes: Self.bytes,
                country: "DE",
                at: Date()
            )
        else {
            Issue.record("garbage DER was not refused as invalid")
            return
        }
        #expect(
            await BatchSignatureVerifier(anchors: [])
                .verify(signature: signature, batchBytes: Self.bytes, country: "DE", at: Date())
                == .failure(.noTrustAnchors)
        )
    }

    @Test("a signing certificate issued by an anchor CA verifies for the CA's country")
    func issuedByAnchor() async throws {
        let ca = try TestSigningCertificate.make(
            country: "FR",
            commonName: "FR federation CA",
            isCertificateAuthority: true
        )
        let identity = try TestSigningCertificate.make(country: "FR", issuer: ca)
        let signer = try BatchSigner(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        let signature = try signer.sign(Self.bytes, at: Date())
        let result = await Self.verifier(ca).verify(
            signature: signature,
            batchBytes: Self.bytes,
            country: "FR",
            at: Date()
        )
        #expect(try result.get() == identity.certificate)
    }

    @Test("a signer is believed only for the country its anchor is registered for, and only as its own country")
    func anchorsAreBoundToCountries() async throws {
        let italianCA = try TestSigningCertificate.make(
            country: "IT",
            commonName: "IT federation CA",
            isCertificateAuthority: true
        )
        let french = try TestSigningCertificate.make(country: "FR")
        let verifier = Self.verifier(italianCA, french)

        // A C=FR signer issued by Italy's CA signs FR keys: the chain ends at Italy's anchor, not at France's.
        let frenchByItaly = try TestSigningCertificate.make(country: "FR", issuer: italianCA)
        let forged = try BatchSigner(
            certificatePEM: frenchByItaly.certificatePEM,
            privateKeyPEM: frenchByItaly.privateKeyPEM
        )
        .sign(Self.bytes, at: Date())
        #expect(
            await verifier.verify(signature: forged, batchBytes: Self.bytes, country: "FR", at: Date())
                == .failure(.untrustedSigner)
        )
        // Nor is it Italy's signer: its subject names France.
        #expect(
            await verifier.verify(signature: forged, batchBytes: Self.bytes, country: "IT", at: Date())
                == .failure(.signerOfAnotherCountry)
        )
        // France's own certificate signs for France and for nobody else.
        let genuine = try BatchSigner(certificatePEM: french.certificatePEM, privateKeyPEM: french.privateKeyPEM)
            .sign(Self.bytes, at: Date())
        #expect(
            try await verifier.verify(signature: genuine, batchBytes: Self.bytes, country: "FR", at: Date()).get()
                == french.certificate
        )
        #expect(
            await verifier.verify(signature: genuine, batchBytes: Self.bytes, country: "IT", at: Date())
                == .failure(.untrustedSigner)
        )
        // An Italian signer of Italy's CA signs for Italy.
        let italian = try TestSigningCertificate.make(country: "IT", issuer: italianCA)
        let italianSignature = try BatchSigner(
            certificatePEM: italian.certificatePEM,
            privateKeyPEM: italian.privateKeyPEM
        )
        .sign(Self.bytes, at: Date())
        #expect(
            try await verifier.verify(signature: italianSignature, batchBytes: Self.bytes, country: "IT", at: Date())
                .get() == italian.certificate
        )
    }

    /// What `openssl cms -sign` is asked for, and with which key.
    struct OpenSSLVariant: Sendable, CustomTestStringConvertible {
        var algorithm: TestSigningCertificate.Algorithm
        var options: [String]
        var label: String

        var testDescription: String { "\(self.algorithm), \(self.label)" }

        static let pss = ["-keyopt", "rsa_padding_mode:pss"]
        /// Every signature layout partners' toolkits produce that a test can ask openssl for.
        static let all: [OpenSSLVariant] = [
            .init(algorithm: .rsa2048, options: [], label: "PKCS#1 v1.5 named rsaEncryption"),
            .init(algorithm: .rsa3072, options: [], label: "PKCS#1 v1.5 named rsaEncryption"),
            .init(algorithm: .rsa2048, options: ["-md", "sha384"], label: "PKCS#1 v1.5, SHA-384"),
            .init(algorithm: .rsa2048, options: pss, label: "PSS, longest salt"),
            .init(algorithm: .rsa3072, options: pss, label: "PSS, longest salt"),
            .init(
                algorithm: .rsa3072,
                options: pss + ["-keyopt", "rsa_pss_saltlen:digest"],
                label: "PSS, salt of the digest's length"
            ),
            .init(algorithm: .rsa3072, options: pss + ["-md", "sha512"], label: "PSS, SHA-512"),
            .init(algorithm: .p256, options: [], label: "ECDSA"),
            .init(algorithm: .p384, options: [], label: "ECDSA, SHA-256"),
            .init(algorithm: .p384, options: ["-md", "sha384"], label: "ECDSA, SHA-384"),
            .init(algorithm: .p256, options: ["-noattr"], label: "ECDSA, no signed attributes"),
            .init(algorithm: .rsa2048, options: ["-noattr"], label: "PKCS#1 v1.5, no signed attributes"),
            .init(algorithm: .rsa2048, options: pss + ["-noattr"], label: "PSS, no signed attributes"),
            .init(algorithm: .p256, options: ["-keyid"], label: "ECDSA, signer by subject key identifier"),
            .init(algorithm: .rsa2048, options: ["-stream"], label: "PKCS#1 v1.5, streamed (indefinite-length BER)"),
        ]
    }

    @Test("a signature by openssl cms -sign verifies, and not over other bytes", arguments: OpenSSLVariant.all)
    func opensslSigns(variant: OpenSSLVariant) async throws {
        try #require(OpenSSL.isAvailable, "openssl is needed for the independent check")
        let identity = try TestSigningCertificate.make(country: "FR", algorithm: variant.algorithm)
        let signature = try OpenSSL.cmsSign(
            Self.bytes,
            certificatePEM: identity.certificatePEM,
            privateKeyPEM: identity.privateKeyPEM,
            options: variant.options
        )
        let verifier = Self.verifier(identity)
        #expect(
            try await verifier.verify(signature: signature, batchBytes: Self.bytes, country: "FR", at: Date()).get()
                == identity.certificate
        )
        var tampered = Self.bytes
        tampered[tampered.count / 2] ^= 0x20
        guard
            case .failure(.invalid) = await verifier.verify(
                signature: signature,
                batchBytes: tampered,
                country: "FR",
                at: Date()
            )
        else {
            Issue.record("a signature over other bytes was not refused")
            return
        }
    }

    @Test("a PSS signature whose parameters name another salt length, or a flipped signature bit, is refused")
    func pssParametersBind() async throws {
        try #require(OpenSSL.isAvailable, "openssl is needed for the independent check")
        let identity = try TestSigningCertificate.make(country: "FR", algorithm: .rsa2048)
        let signature = try OpenSSL.cmsSign(
            Self.bytes,
            certificatePEM: identity.certificatePEM,
            privateKeyPEM: identity.privateKeyPEM,
            options: OpenSSLVariant.pss
        )
        var der = try #require(Data(base64Encoded: signature)).map { $0 }
        let signed = try DetachedSignedData(berEncoded: der)
        guard case .rsaPSS(let parameters) = signed.scheme else {
            Issue.record("openssl's PSS signature was read as \(signed.scheme)")
            return
        }
        #expect(parameters == RSAPSSParameters(digest: .sha256, maskDigest: .sha256, saltLength: 256 - 32 - 2))
        var shorter = signed
        shorter.scheme = .rsaPSS(RSAPSSParameters(digest: .sha256, maskDigest: .sha256, saltLength: 32))
        #expect(throws: DetachedSignatureError.self) { try shorter.signs(Self.bytes) }
        try signed.signs(Self.bytes)

        der[der.count - 1] ^= 0x01  // the last byte of the signature value
        let flipped = try DetachedSignedData(berEncoded: der)
        #expect(throws: DetachedSignatureError.self) { try flipped.signs(Self.bytes) }
    }

    @Test("a PSS salt length no key can hold is refused, when parsed and when checked, without overflowing")
    func pssSaltBounds() throws {
        // RSASSA-PSS-params { [0] sha256, [1] mgf1(sha256), [2] saltLength }
        func parameters(salt: [UInt8]) -> [UInt8] {
            let sha256 = DER.tlv(0x30, [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00])
            let mgf1 = DER.tlv(0x30, [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x08] + sha256)
            return DER.tlv(0x30, DER.tlv(0xA0, sha256) + DER.tlv(0xA1, mgf1) + DER.tlv(0xA2, DER.tlv(0x02, salt)))
        }
        let accepted = try RSAPSSParameters(try DER.parse(parameters(salt: [0x20])))
        #expect(accepted == RSAPSSParameters(digest: .sha256, maskDigest: .sha256, saltLength: 32))
        for salt in [[0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], [0x10, 0x00, 0x00], [0xFF]] as [[UInt8]] {
            #expect(throws: DetachedSignatureError.self, "salt \(salt)") {
                try RSAPSSParameters(try DER.parse(parameters(salt: salt)))
            }
        }
        for saltLength in [Int.max, Int.max - 40, 256, -1] {
            let encoded = [UInt8](repeating: 0, count: 255) + [0xBC]
            #expect(
                !RSAPSS.encodingMatches(
                    Self.bytes,
                    encoded: encoded,
                    emBits: 2047,
                    parameters: RSAPSSParameters(digest: .sha256, maskDigest: .sha256, saltLength: saltLength)
                )
            )
        }
    }

    @Test("a signature with unsigned attributes (a timestamp) verifies: they are not what is signed")
    func unsignedAttributes() async throws {
        try #require(OpenSSL.isAvailable, "openssl is needed for the independent check")
        let identity = try TestSigningCertificate.make(country: "FR", algorithm: .p256)
        let signature = try OpenSSL.cmsSign(
            Self.bytes,
            certificatePEM: identity.certificatePEM,
            privateKeyPEM: identity.privateKeyPEM,
            options: []
        )
        let der = try #require(Data(base64Encoded: signature)).map { $0 }
        // unsignedAttrs [1] { Attribute { id-aa-timeStampToken, SET { NULL } } }
        let timestamp: [UInt8] = [0x06, 0x0B, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x10, 0x02, 0x0E]
        let unsigned = DER.tlv(0xA1, DER.tlv(0x30, timestamp + DER.tlv(0x31, [0x05, 0x00])))
        // ContentInfo → [0] → SignedData → signerInfos (its last field) → the first SignerInfo.
        let extended = try DER.appending(unsigned, inside: der, at: [1, 0, -1, 0])
        #expect(extended.count >= der.count + unsigned.count)
        #expect(
            try await Self.verifier(identity)
                .verify(
                    signature: Data(extended).base64EncodedString(),
                    batchBytes: Self.bytes,
                    country: "FR",
                    at: Date()
                )
                .get() == identity.certificate
        )
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
        arguments: TestSigningCertificate.Algorithm.allCases
    )
    func opensslVerifies(algorithm: TestSigningCertificate.Algorithm) throws {
        try #require(OpenSSL.isAvailable, "openssl is needed for the independent check")
        let identity = try TestSigningCertificate.make(country: "DE", algorithm: algorithm)
        let signer = try BatchSigner(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        let signature = try #require(Data(base64Encoded: try signer.sign(Self.bytes, at: Date())))
        var tampered = Self.bytes
        tampered[tampered.count - 2] ^= 0x01
        try OpenSSL.withFolder { folder in
            try signature.write(to: folder.appendingPathComponent("batch.sig.der"))
            try Data(identity.certificatePEM.utf8).write(to: folder.appendingPathComponent("signing.pem"))
            try Data(Self.bytes).write(to: folder.appendingPathComponent("batch.bin"))
            try Data(tampered).write(to: folder.appendingPathComponent("tampered.bin"))
            func verify(_ content: String) throws -> (status: Int32, output: String) {
                try OpenSSL.run(
                    [
                        "cms", "-verify", "-binary", "-inform", "DER", "-in", "batch.sig.der", "-content", content,
                        "-CAfile", "signing.pem", "-purpose", "any", "-out", "/dev/null",
                    ],
                    in: folder
                )
            }
            let good = try verify("batch.bin")
            #expect(good.status == 0, "\(good.output)")
            #expect(good.output.contains("Verification successful"))
            let bad = try verify("tampered.bin")
            #expect(bad.status != 0)
            #expect(bad.output.contains("Verification failure"))
        }
    }
}

/// DER written and rewritten by hand: a field a test needs that no tool writes.
enum DER {
    /// A tag, its definite length and `content`.
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag] + self.length(content.count) + content
    }

    static func length(_ count: Int) -> [UInt8] {
        guard count >= 0x80 else { return [UInt8(count)] }
        let bytes = withUnsafeBytes(of: UInt32(count).bigEndian, Array.init).drop { $0 == 0 }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func parse(_ bytes: [UInt8]) throws -> ASN1Node {
        try SwiftASN1.DER.parse(bytes)
    }

    /// `element` appended to the content of the constructed value reached from `der` by `path` (each step a child's
    /// index, -1 for the last), every enclosing length rewritten.
    static func appending(_ element: [UInt8], inside der: [UInt8], at path: [Int]) throws -> [UInt8] {
        let (tag, content) = try self.split(der)
        guard let step = path.first else { return self.tlv(tag, content + element) }
        var children: [[UInt8]] = []
        var rest = content[...]
        while !rest.isEmpty {
            let size = try self.encodedSize(Array(rest))
            children.append(Array(rest.prefix(size)))
            rest = rest.dropFirst(size)
        }
        let index = step < 0 ? children.count + step : step
        guard children.indices.contains(index) else { throw ASN1Error.invalidASN1Object(reason: "no such child") }
        children[index] = try self.appending(element, inside: children[index], at: Array(path.dropFirst()))
        return self.tlv(tag, children.flatMap { $0 })
    }

    /// The tag (one byte) and content of the value `der` starts with.
    private static func split(_ der: [UInt8]) throws -> (UInt8, [UInt8]) {
        let (header, length) = try self.header(der)
        return (der[0], Array(der[header..<(header + length)]))
    }

    private static func encodedSize(_ der: [UInt8]) throws -> Int {
        let (header, length) = try self.header(der)
        return header + length
    }

    private static func header(_ der: [UInt8]) throws -> (header: Int, length: Int) {
        guard der.count >= 2, der[0] & 0x1F != 0x1F, der[1] != 0x80 else {
            throw ASN1Error.invalidASN1Object(reason: "not a definite-length value with a one-byte tag")
        }
        guard der[1] & 0x80 != 0 else { return (2, Int(der[1])) }
        let count = Int(der[1] & 0x7F)
        guard der.count >= 2 + count else { throw ASN1Error.invalidASN1Object(reason: "truncated length") }
        let length = der[2..<(2 + count)].reduce(0) { $0 << 8 | Int($1) }
        guard der.count >= 2 + count + length else { throw ASN1Error.invalidASN1Object(reason: "truncated value") }
        return (2 + count, length)
    }
}
