// Attestations made here, with keys and certificate chains of the tests' own: a root, an intermediate and a leaf for
// attest.android.com (SafetyNet), and an app's decryption and verification keys (Play Integrity).

package import Crypto
package import ENAttestation
import ENCrypto
package import Foundation
import SwiftASN1
package import X509
package import _CryptoExtras

/// A certificate authority of the test, or a leaf it issued, with its key.
package struct TestAuthority: Sendable {
    package let certificate: Certificate
    package let key: Certificate.PrivateKey
    /// The key itself, for signing statements: RSA or P-256.
    package var rsa: _RSA.Signing.PrivateKey? = nil
    package var ec: P256.Signing.PrivateKey? = nil

    /// A self-signed root CA.
    package static func root(_ name: String) throws -> TestAuthority {
        let ec = P256.Signing.PrivateKey()
        let key = Certificate.PrivateKey(ec)
        let subject = try DistinguishedName { CommonName(name) }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: key.publicKey,
            notValidBefore: Date().addingTimeInterval(-86_400),
            notValidAfter: Date().addingTimeInterval(365 * 86_400),
            issuer: subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: key
        )
        return TestAuthority(certificate: certificate, key: key, ec: ec)
    }

    /// An intermediate CA this authority issues.
    package func intermediate(_ name: String) throws -> TestAuthority {
        let ec = P256.Signing.PrivateKey()
        let key = Certificate.PrivateKey(ec)
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: key.publicKey,
            notValidBefore: Date().addingTimeInterval(-86_400),
            notValidAfter: Date().addingTimeInterval(365 * 86_400),
            issuer: self.certificate.subject,
            subject: try DistinguishedName { CommonName(name) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: self.key
        )
        return TestAuthority(certificate: certificate, key: key, ec: ec)
    }

    /// A leaf for `hostname` (in its subject alternative names and common name) with an RSA or P-256 key.
    package func leaf(
        hostname: String,
        rsa: Bool = true,
        validFor lifetime: TimeInterval = 86_400
    ) throws -> TestAuthority {
        let rsaKey = rsa ? try TestRSAKeys.key(bits: 2048) : nil
        let ecKey = rsa ? nil : P256.Signing.PrivateKey()
        let key = rsaKey.map { Certificate.PrivateKey($0) } ?? Certificate.PrivateKey(ecKey!)
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: key.publicKey,
            notValidBefore: Date().addingTimeInterval(-3600),
            notValidAfter: Date().addingTimeInterval(lifetime - 3600),
            issuer: self.certificate.subject,
            subject: try DistinguishedName { CommonName(hostname) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                SubjectAlternativeNames([.dnsName(hostname)])
            },
            issuerPrivateKey: self.key
        )
        return TestAuthority(certificate: certificate, key: key, rsa: rsaKey, ec: ecKey)
    }

    package var der: Data {
        var serializer = DER.Serializer()
        try! serializer.serialize(self.certificate)
        return Data(serializer.serializedBytes)
    }
}

/// A donation's payload and salt, and attestations of it.
package struct AttestationFixture: Sendable {
    package static let package = "de.rki.coronawarnapp"
    package static let digest = Data(SHA256.hash(data: Data("the app's signing certificate".utf8)))

    package let root: TestAuthority
    package let intermediate: TestAuthority
    package let leaf: TestAuthority
    package var salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
    package var payload = Data("a donation's protobuf bytes".utf8)

    package init(hostname: String = "attest.android.com", rsa: Bool = true) throws {
        self.root = try TestAuthority.root("EN Test Attestation Root")
        self.intermediate = try self.root.intermediate("EN Test Attestation CA")
        self.leaf = try self.intermediate.leaf(hostname: hostname, rsa: rsa)
    }

    package var policy: AndroidAttestationPolicy {
        var policy = AndroidAttestationPolicy()
        policy.certificateDigests = [Self.digest]
        return policy
    }

    package var nonce: String {
        AttestationNonce.expected(salt: self.salt, payload: self.payload).base64EncodedString()
    }

    /// SafetyNet claims of a genuine, strong device that attests this fixture's payload now.
    package func safetyNetClaims() -> [String: Any] {
        [
            "nonce": self.nonce,
            "timestampMs": Int64(Date().timeIntervalSince1970 * 1000),
            "apkPackageName": Self.package,
            "apkCertificateDigestSha256": [Self.digest.base64EncodedString()],
            "ctsProfileMatch": true,
            "basicIntegrity": true,
            "evaluationType": "BASIC,HARDWARE_BACKED",
        ]
    }

    /// A SafetyNet JWS of `claims`, signed by `signer` (the leaf by default) and carrying `chain` in `x5c`.
    package func safetyNetJWS(
        _ claims: [String: Any],
        signer: TestAuthority? = nil,
        chain: [TestAuthority]? = nil
    ) throws
        -> String
    {
        let signer = signer ?? self.leaf
        let chain = chain ?? [self.leaf, self.intermediate]
        let header: [String: Any] = [
            "alg": signer.rsa != nil ? "RS256" : "ES256", "x5c": chain.map { $0.der.base64EncodedString() },
        ]
        let input =
            Base64URL.encode(try JSONSerialization.data(withJSONObject: header)) + "."
            + Base64URL.encode(try JSONSerialization.data(withJSONObject: claims))
        let signature: Data
        if let key = signer.rsa {
            signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5).rawRepresentation
        } else {
            signature = try signer.ec!.signature(for: Data(input.utf8)).rawRepresentation
        }
        return input + "." + Base64URL.encode(signature)
    }
}

/// An app's Play Integrity keys, and tokens made with them.
package struct PlayIntegrityKeys: Sendable {
    package let decryption = SymmetricKey(size: .bits256)
    package let signing = P256.Signing.PrivateKey()

    package init() {}

    package func verifier(_ policy: AndroidAttestationPolicy) -> PlayIntegrityVerifier {
        PlayIntegrityVerifier(decryptionKey: self.decryption, verificationKey: self.signing.publicKey, policy: policy)
    }

    /// A verdict of a recognised app on a device meeting `verdicts`, for `fixture`'s payload now.
    package static func verdict(
        _ fixture: AttestationFixture,
        verdicts: [String] = ["MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"]
    )
        -> [String: Any]
    {
        [
            "requestDetails": [
                "requestPackageName": AttestationFixture.package,
                "requestHash": fixture.nonce,
                "timestampMillis": String(Int64(Date().timeIntervalSince1970 * 1000)),
            ],
            "appIntegrity": [
                "appRecognitionVerdict": "PLAY_RECOGNIZED",
                "packageName": AttestationFixture.package,
                "certificateSha256Digest": [Base64URL.encode(AttestationFixture.digest)],
                "versionCode": "42",
            ],
            "deviceIntegrity": ["deviceRecognitionVerdict": verdicts],
            "accountDetails": ["appLicensingVerdict": "LICENSED"],
        ]
    }

    /// `verdict` signed (ES256) with `signing` and encrypted (A256KW, A256GCM) with `decryption`.
    package func token(
        _ verdict: [String: Any],
        signing: P256.Signing.PrivateKey? = nil,
        decryption: SymmetricKey? = nil
    ) throws -> String {
        let jwsInput =
            Base64URL.encode(Data(#"{"alg":"ES256"}"#.utf8)) + "."
            + Base64URL.encode(try JSONSerialization.data(withJSONObject: verdict))
        let signature = try (signing ?? self.signing).signature(for: Data(jwsInput.utf8))
        let jws = jwsInput + "." + Base64URL.encode(signature.rawRepresentation)
        let header = Base64URL.encode(Data(#"{"alg":"A256KW","enc":"A256GCM"}"#.utf8))
        let contentKey = SymmetricKey(size: .bits256)
        let wrapped = try AES.KeyWrap.wrap(contentKey, using: decryption ?? self.decryption)
        let box = try AES.GCM.seal(Data(jws.utf8), using: contentKey, authenticating: Data(header.utf8))
        return [
            header, Base64URL.encode(wrapped), Base64URL.encode(box.nonce), Base64URL.encode(box.ciphertext),
            Base64URL.encode(box.tag),
        ].joined(separator: ".")
    }
}
