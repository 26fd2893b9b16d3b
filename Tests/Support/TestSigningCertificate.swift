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

    package enum Algorithm: Sendable { case p256, rsa2048 }

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
        case .rsa2048:
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
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
            signatureAlgorithm: (issuer?.algorithm ?? algorithm) == .p256 ? .ecdsaWithSHA256 : .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
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
