// Batch-signing certificates of federation countries: self-signed or issued by a test CA, ECDSA or RSA.

import Crypto
package import Foundation
import SwiftASN1
import Synchronization
package import X509
package import _CryptoExtras

/// A certificate with its private key, as PEM, naming a country in its subject (`C=…, CN=…`).
package struct TestSigningCertificate: Sendable {
    package let certificate: Certificate
    package let certificatePEM: String
    package let privateKeyPEM: String
    package let algorithm: Algorithm

    package enum Algorithm: Sendable, CaseIterable, CustomStringConvertible {
        case p256, p384, rsa2048, rsa3072

        /// What a certificate issued with a key of this kind is signed with.
        var certificateSignature: Certificate.SignatureAlgorithm {
            switch self {
            case .p256: .ecdsaWithSHA256
            case .p384: .ecdsaWithSHA384
            case .rsa2048, .rsa3072: .sha256WithRSAEncryption
            }
        }

        package var description: String {
            switch self {
            case .p256: "P-256"
            case .p384: "P-384"
            case .rsa2048: "RSA-2048"
            case .rsa3072: "RSA-3072"
            }
        }
    }

    /// A certificate for `country`, self-signed unless `issuer` is given, valid from an hour ago for `lifetime`.
    package static func make(
        country: String,
        commonName: String? = nil,
        algorithm: Algorithm = .p256,
        issuer: TestSigningCertificate? = nil,
        isCertificateAuthority: Bool = false,
        notValidBefore: Date = Date().addingTimeInterval(-3600),
        lifetime: TimeInterval = 86_400
    ) throws -> TestSigningCertificate {
        let privateKey: Certificate.PrivateKey
        let privateKeyPEM: String
        switch algorithm {
        case .p256:
            let key = P256.Signing.PrivateKey()
            privateKey = Certificate.PrivateKey(key)
            privateKeyPEM = key.pemRepresentation
        case .p384:
            let key = P384.Signing.PrivateKey()
            privateKey = Certificate.PrivateKey(key)
            privateKeyPEM = key.pemRepresentation
        case .rsa2048, .rsa3072:
            let key = try TestRSAKeys.key(bits: algorithm == .rsa2048 ? 2048 : 3072)
            privateKey = Certificate.PrivateKey(key)
            privateKeyPEM = key.pemRepresentation
        }
        let subject = try DistinguishedName {
            CountryName(country)
            OrganizationName("EN Test \(country)")
            CommonName(commonName ?? "EN Test batch signing \(country)")
        }
        let issuerKey = try issuer.map { try Certificate.PrivateKey(pemEncoded: $0.privateKeyPEM) } ?? privateKey
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: privateKey.publicKey,
            notValidBefore: notValidBefore,
            notValidAfter: notValidBefore.addingTimeInterval(lifetime),
            issuer: issuer?.certificate.subject ?? subject,
            subject: subject,
            signatureAlgorithm: (issuer?.algorithm ?? algorithm).certificateSignature,
            extensions: try Certificate.Extensions {
                SubjectKeyIdentifier(hash: privateKey.publicKey)
                if isCertificateAuthority {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                } else {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                }
            },
            issuerPrivateKey: issuerKey
        )
        return TestSigningCertificate(
            certificate: certificate,
            certificatePEM: try certificate.serializeAsPEM().pemString,
            privateKeyPEM: privateKeyPEM,
            algorithm: algorithm
        )
    }
}

/// One RSA key per size for the whole test process, shared by every RSA certificate of that size (they differ in
/// subject, serial and issuer, which is what the tests tell apart; a test that needs a key of its own makes one). RSA key generation in a debug build runs for
/// seconds and blocks a thread of the shared pool: generated once, by openssl where there is one.
package enum TestRSAKeys {
    private static let keys = Mutex<[Int: _RSA.Signing.PrivateKey]>([:])

    package static func key(bits: Int) throws -> _RSA.Signing.PrivateKey {
        try self.keys.withLock { keys in
            if let key = keys[bits] { return key }
            let key = try self.generate(bits: bits)
            keys[bits] = key
            return key
        }
    }

    private static func generate(bits: Int) throws -> _RSA.Signing.PrivateKey {
        guard OpenSSL.isAvailable else {
            return try _RSA.Signing.PrivateKey(keySize: .init(bitCount: bits))
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (status, output) = try OpenSSL.run(
            ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(bits)", "-out", "key.pem"],
            in: folder
        )
        guard status == 0 else { throw OpenSSLKeyError(output: output) }
        let pem = try String(contentsOf: folder.appendingPathComponent("key.pem"), encoding: .utf8)
        return try _RSA.Signing.PrivateKey(pemRepresentation: pem)
    }

    struct OpenSSLKeyError: Error {
        let output: String
    }
}
