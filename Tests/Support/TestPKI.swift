// A throw-away certificate authority with server and client certificates, for real TLS tests on loopback.

import Crypto
import ENCrypto
package import Foundation
package import NIOSSL
import SwiftASN1
import X509

/// A CA, a server certificate for `localhost`/127.0.0.1 and a way to issue client certificates, all as PEM files
/// in a temporary directory.
package struct TestPKI: Sendable {
    package let directory: URL
    package let caCertificateFile: URL
    package let serverCertificateFile: URL
    package let serverKeyFile: URL
    private let caKeyPEM: String
    private let caCertificatePEM: String

    /// A client certificate and the SHA-256 of its DER encoding.
    package struct Client: Sendable {
        package let certificateFile: URL
        package let keyFile: URL
        package let thumbprint: String
    }

    /// Creates a fresh CA named `name` and a server certificate it signed.
    package static func make(name: String = "EN Test CA") throws -> TestPKI {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("en-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName(name) }
        let ca = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(caKey.publicKey),
            notValidBefore: Date().addingTimeInterval(-3600),
            notValidAfter: Date().addingTimeInterval(86400),
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(caKey)
        )
        let caCertificatePEM = try ca.serializeAsPEM().pemString
        let pki = TestPKI(
            directory: directory,
            caCertificateFile: directory.appendingPathComponent("ca.pem"),
            serverCertificateFile: directory.appendingPathComponent("server.pem"),
            serverKeyFile: directory.appendingPathComponent("server-key.pem"),
            caKeyPEM: caKey.pemRepresentation,
            caCertificatePEM: caCertificatePEM
        )
        try caCertificatePEM.write(to: pki.caCertificateFile, atomically: true, encoding: .utf8)
        let server = try pki.issue(
            commonName: "localhost",
            extendedKeyUsage: .serverAuth,
            subjectAlternativeNames: [
                .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
            ]
        )
        try server.certificate.write(to: pki.serverCertificateFile, atomically: true, encoding: .utf8)
        try server.key.write(to: pki.serverKeyFile, atomically: true, encoding: .utf8)
        return pki
    }

    /// Issues a client certificate signed by this CA and writes it next to the others.
    package func issueClient(commonName: String) throws -> Client {
        let issued = try self.issue(commonName: commonName, extendedKeyUsage: .clientAuth, subjectAlternativeNames: [])
        let base = commonName.filter { $0.isLetter || $0.isNumber }
        let certificateFile = self.directory.appendingPathComponent("\(base)-\(UUID().uuidString.prefix(8)).pem")
        let keyFile = self.directory.appendingPathComponent("\(base)-\(UUID().uuidString.prefix(8))-key.pem")
        try issued.certificate.write(to: certificateFile, atomically: true, encoding: .utf8)
        try issued.key.write(to: keyFile, atomically: true, encoding: .utf8)
        return Client(certificateFile: certificateFile, keyFile: keyFile, thumbprint: issued.thumbprint)
    }

    /// Client TLS settings trusting this CA, presenting `client`'s certificate when given.
    package func clientTLS(presenting client: Client?) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(self.caCertificateFile.path)
        if let client {
            tls.certificateChain = try NIOSSLCertificate.fromPEMFile(client.certificateFile.path).map {
                .certificate($0)
            }
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: client.keyFile.path, format: .pem))
        }
        return tls
    }

    /// Removes the directory with every key in it.
    package func remove() {
        try? FileManager.default.removeItem(at: self.directory)
    }

    private func issue(
        commonName: String,
        extendedKeyUsage: ExtendedKeyUsage.Usage,
        subjectAlternativeNames: [GeneralName]
    ) throws -> (certificate: String, key: String, thumbprint: String) {
        let caKey = try P256.Signing.PrivateKey(pemRepresentation: self.caKeyPEM)
        let ca = try Certificate(pemEncoded: self.caCertificatePEM)
        let key = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(key.publicKey),
            notValidBefore: Date().addingTimeInterval(-3600),
            notValidAfter: Date().addingTimeInterval(86400),
            issuer: ca.subject,
            subject: try DistinguishedName { CommonName(commonName) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([extendedKeyUsage])
                if !subjectAlternativeNames.isEmpty {
                    SubjectAlternativeNames(subjectAlternativeNames)
                }
            },
            issuerPrivateKey: .init(caKey)
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        let thumbprint = CertificateThumbprint(derEncodedCertificate: serializer.serializedBytes).hex
        return (try certificate.serializeAsPEM().pemString, key.pemRepresentation, thumbprint)
    }
}
