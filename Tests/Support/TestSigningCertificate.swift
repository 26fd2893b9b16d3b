// Batch-signing certificates of federation countries: self-signed or issued by a test CA, ECDSA or RSA.

import Crypto
package import Foundation
import SwiftASN1
package import X509
import _CryptoExtras

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
            let key = try _RSA.Signing.PrivateKey(keySize: algorithm == .rsa2048 ? .bits2048 : .bits3072)
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
