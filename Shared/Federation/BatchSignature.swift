// Detached CMS signatures over a batch's canonical bytes (cwa-server §5.3, cwa-satellites §5.4): signed with
// swift-certificates' CMS support (an SPI: an `openssl cms -verify` test keeps it honest), verified by our own parser
// (`DetachedSignedData`), which takes the algorithms partners' toolkits write (`openssl cms -sign` tests hold it to
// them).

package import Foundation
import SwiftASN1
@_spi(CMS) @_spi(FixedExpiryValidationTime) package import X509

/// Signs batches with a country's signing certificate: a detached CMS `SignedData` with one signer, the signing
/// certificate and a signing time, the key's default algorithm (ECDSA with SHA-256 for P-256, SHA-256 with RSA), DER, then standard Base64 for the `batchSignature` header.
package struct BatchSigner: Sendable {
    package let certificate: Certificate
    private let privateKey: Certificate.PrivateKey

    /// A certificate and its private key (ECDSA P-256/P-384/P-521 or RSA, PEM: PKCS#8, SEC1 or PKCS#1).
    package init(certificatePEM: String, privateKeyPEM: String) throws(BatchSignerError) {
        do {
            self.certificate = try Certificate(pemEncoded: certificatePEM)
        } catch {
            throw .unreadableCertificate
        }
        do {
            self.privateKey = try Certificate.PrivateKey(pemEncoded: privateKeyPEM)
        } catch {
            throw .unreadablePrivateKey
        }
        guard self.privateKey.publicKey == self.certificate.publicKey else { throw .keyDoesNotMatchCertificate }
    }

    /// The Base64 `batchSignature` of `batchBytes` (the output of `BatchSignatureBytes.batch(of:)`).
    package func sign(_ batchBytes: [UInt8], at time: Date) throws -> String {
        let signature = try CMS.sign(
            batchBytes,
            certificate: self.certificate,
            privateKey: self.privateKey,
            signingTime: time,
            detached: true
        )
        return Data(signature).base64EncodedString()
    }
}

/// Why a signing certificate and key were not accepted; the messages name no key material.
package enum BatchSignerError: Error, Equatable, CustomStringConvertible {
    case unreadableCertificate
    case unreadablePrivateKey
    case keyDoesNotMatchCertificate

    package var description: String {
        switch self {
        case .unreadableCertificate: "the signing certificate is not a PEM X.509 certificate"
        case .unreadablePrivateKey: "the signing key is not a PEM ECDSA or RSA private key"
        case .keyDoesNotMatchCertificate: "the signing key does not belong to the signing certificate"
        }
    }
}

/// A certificate a batch signer may be, or chain to, and the country it is registered for: EFGS binds every SIGNING
/// certificate to one country (cwa-satellites §5.4), and a signer is believed only for the country of its anchor.
package struct BatchTrustAnchor: Sendable, Equatable {
    package var certificate: Certificate
    package var country: String

    package init(certificate: Certificate, country: String) {
        self.certificate = certificate
        self.country = country.uppercased()
    }

    /// The anchors of a PEM bundle, each registered for the country of its own subject (`C`); `nil` when one names
    /// no country.
    package static func registeredBySubject(_ certificates: [Certificate]) -> [BatchTrustAnchor]? {
        var anchors: [BatchTrustAnchor] = []
        for certificate in certificates {
            guard let country = certificate.countryCode else { return nil }
            anchors.append(BatchTrustAnchor(certificate: certificate, country: country))
        }
        return anchors
    }
}

/// Checks a batch signature against trust anchors: the CMS structure (detached, one signer whose certificate it
/// carries), the signature over exactly the given bytes with any of the algorithms partners sign with (ECDSA,
/// RSASSA-PKCS1-v1_5 named by `sha*WithRSAEncryption` or by `rsaEncryption`, RSASSA-PSS), and the signer
/// certificate: its subject's country must be the batch's, and it must be an anchor registered for that country, or
/// chain to one, and be valid at the time of the check.
package struct BatchSignatureVerifier: Sendable {
    private let anchors: [BatchTrustAnchor]

    package init(anchors: [BatchTrustAnchor]) {
        self.anchors = anchors
    }

    /// The signer's certificate when `signature` (standard Base64 of BER or DER) signs `batchBytes` for `country`.
    package func verify(
        signature: String,
        batchBytes: [UInt8],
        country: String,
        at time: Date
    ) async -> Result<Certificate, BatchSignatureFailure> {
        let roots = self.anchors.filter { $0.country == country.uppercased() }.map(\.certificate)
        guard !self.anchors.isEmpty else { return .failure(.noTrustAnchors) }
        let result = await DetachedSignatureVerifier(roots: roots).verify(
            signature: signature,
            content: batchBytes,
            at: time
        )
        guard case .success(let signer) = result else { return result }
        guard signer.countryCode == country.uppercased() else { return .failure(.signerOfAnotherCountry) }
        return .success(signer)
    }
}

/// Checks a detached CMS signature over any content against root certificates, without a country: the rehearsal
/// gateway's operator signature on its certificate rows.
package struct DetachedSignatureVerifier: Sendable {
    private let roots: [Certificate]

    package init(roots: [Certificate]) {
        self.roots = roots
    }

    /// The signer's certificate when `signature` (standard Base64 of BER or DER) signs `content` and the signer is one
    /// of the roots or chains to one.
    package func verify(
        signature: String,
        content: [UInt8],
        at time: Date
    ) async -> Result<Certificate, BatchSignatureFailure> {
        guard let der = Data(base64Encoded: signature), !der.isEmpty else { return .failure(.notBase64) }
        let signed: DetachedSignedData
        do {
            signed = try DetachedSignedData(berEncoded: Array(der))
        } catch {
            switch error {
            case .invalid(let reason): return .failure(.invalid(reason))
            }
        }
        // The signer is trusted before any signature arithmetic runs: an untrusted party's parameters cost nothing.
        guard !self.roots.isEmpty else { return .failure(.untrustedSigner) }
        let intermediates = CertificateStore(signed.certificates.filter { $0 != signed.signer })
        var verifier = Verifier(rootCertificates: CertificateStore(self.roots)) {
            SigningCertificatePolicy(time: time)
        }
        guard case .validCertificate = await verifier.validate(leaf: signed.signer, intermediates: intermediates) else {
            return .failure(.untrustedSigner)
        }
        do {
            try signed.signs(content)
        } catch {
            switch error {
            case .invalid(let reason): return .failure(.invalid(reason))
            }
        }
        return .success(signed.signer)
    }
}

/// A signing certificate that is itself an anchor needs only to be valid at `time`: countries sign with self-signed
/// certificates that are no CA, and the gateway trusts exactly the certificate registered (cwa-satellites §5.4, its
/// PR #100). A longer chain must satisfy RFC 5280 up to an anchor CA.
private struct SigningCertificatePolicy: VerifierPolicy {
    let time: Date
    var chainPolicy: RFC5280Policy
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier]

    init(time: Date) {
        self.time = time
        self.chainPolicy = RFC5280Policy(fixedExpiryValidationTime: time)
        self.verifyingCriticalExtensions = self.chainPolicy.verifyingCriticalExtensions
    }

    mutating func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 1, let certificate = chain.first else {
            return self.chainPolicy.chainMeetsPolicyRequirements(chain: chain)
        }
        guard certificate.notValidBefore <= self.time, self.time <= certificate.notValidAfter else {
            return .failsToMeetPolicy(reason: "the signing certificate is not valid at the time of the check")
        }
        return .meetsPolicy
    }
}

/// Why a batch signature was refused. `invalid` carries swift-certificates' reason, which names structure, never
/// content; callers log the case, not the reason.
package enum BatchSignatureFailure: Error, Equatable {
    case noTrustAnchors
    case notBase64
    /// A certificate signed, but it is not an anchor of the batch's country, does not chain to one, or is not valid
    /// now.
    case untrustedSigner
    /// The signer's certificate names another country than the batch's.
    case signerOfAnotherCountry
    /// Not a detached CMS signature with one signer, or not a signature over these bytes.
    case invalid(String)

    /// A short label for logs and metrics.
    package var label: String {
        switch self {
        case .noTrustAnchors: "no_trust_anchors"
        case .notBase64: "not_base64"
        case .untrustedSigner: "untrusted_signer"
        case .signerOfAnotherCountry: "signer_of_another_country"
        case .invalid: "invalid"
        }
    }
}

extension Certificate {
    /// The subject's country (`C`), upper-cased; `nil` when the subject has none.
    package var countryCode: String? {
        self.subject.attribute(.RDNAttributeType.countryName)?.uppercased()
    }

    /// The subject's common name (`CN`); `nil` when the subject has none.
    package var commonName: String? {
        self.subject.attribute(.RDNAttributeType.commonName)
    }

    /// The DER encoding.
    package func derEncoded() throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(self)
        return serializer.serializedBytes
    }

    /// The certificates of a PEM bundle (one or more `CERTIFICATE` blocks).
    package static func bundle(pem: String) throws -> [Certificate] {
        try PEMDocument.parseMultiple(pemString: pem).map { try Certificate(pemDocument: $0) }
    }
}

extension DistinguishedName {
    /// The text of the first attribute of `type`.
    fileprivate func attribute(_ type: SwiftASN1.ASN1ObjectIdentifier) -> String? {
        for name in self {
            for attribute in name where attribute.type == type {
                return String(attribute.value)
            }
        }
        return nil
    }
}
