// SafetyNet attestation statements (cwa-satellites §4.2): a compact JWS signed by the leaf of its `x5c` chain, the
// chain trusted by the configured roots, the leaf issued to attest.android.com, then the claims, in the reference's
// order. The salt's window and the SRS Android-ID limit need the database and stay with the service.

import Crypto
import ENCrypto
package import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) package import X509
import _CryptoExtras

/// The claims of a SafetyNet attestation statement the checks read.
struct SafetyNetClaims: Decodable, Sendable {
    var nonce: String?
    var timestampMs: Int64?
    var apkPackageName: String?
    var apkCertificateDigestSha256: [String]?
    var ctsProfileMatch: Bool?
    var basicIntegrity: Bool?
    var evaluationType: String?
}

/// Verifies SafetyNet attestation statements.
package struct SafetyNetVerifier: Sendable {
    /// The roots the `x5c` chain must reach (Google's in production).
    package var trustRoots: [Certificate]
    /// The name the leaf must be issued to (`certificate-hostname`).
    package var hostname = "attest.android.com"
    package var policy: AndroidAttestationPolicy

    package init(trustRoots: [Certificate], policy: AndroidAttestationPolicy = AndroidAttestationPolicy()) {
        self.trustRoots = trustRoots
        self.policy = policy
    }

    /// The device's flags when `jws` attests `payload` under `salt` for `scenario`, else the reference's failure.
    package func verify(
        jws: String,
        salt: Data,
        payload: Data,
        scenario: AttestationScenario,
        now: Date = Date()
    ) async -> Result<AndroidIntegrity, AttestationFailure> {
        guard !jws.isEmpty else { return .failure(.missingMandatoryAuthenticationFields) }
        guard let statement = SignedStatement(compact: jws) else { return .failure(.jwsSignatureVerificationFailed) }
        // Step 3: the signature with the leaf, the chain against the roots.
        guard let leaf = await self.verifiedLeaf(statement, at: now) else {
            return .failure(.jwsSignatureVerificationFailed)
        }
        // Step 4: the leaf's name.
        guard Self.names(leaf).contains(where: { Self.matches($0, hostname: self.hostname) }) else {
            return .failure(.failedAttestationHostnameValidation)
        }
        guard let claims = try? JSONDecoder().decode(SafetyNetClaims.self, from: statement.payload) else {
            return .failure(.jwsSignatureVerificationFailed)
        }
        // Step 5: the nonce binds the statement to this request.
        if self.policy.checksNonce {
            // Missing and empty are the same to the reference (a blank field is a missing one).
            guard let nonce = claims.nonce, !nonce.isEmpty else {
                return .failure(.missingMandatoryAuthenticationFields)
            }
            guard AttestationNonce.matches(nonce, expected: AttestationNonce.expected(salt: salt, payload: payload))
            else { return .failure(.nonceMismatch) }
        }
        // Steps 6–8: time, package, certificate digest.
        let digests = (claims.apkCertificateDigestSha256 ?? []).map { decodeBase64($0) ?? Data() }
        if let failure = self.policy.checkApp(
            timestamp: Date(timeIntervalSince1970: Double(claims.timestampMs ?? 0) / 1000),
            packageName: claims.apkPackageName ?? "",
            certificateDigests: digests,
            now: now
        ) {
            return .failure(failure)
        }
        // Step 9: the scenario's integrity (the evaluation type by substring, as the reference).
        let evaluation = claims.evaluationType ?? ""
        let integrity = AndroidIntegrity(
            basicIntegrity: claims.basicIntegrity ?? false,
            ctsProfileMatch: claims.ctsProfileMatch ?? false,
            evaluationTypeBasic: evaluation.contains("BASIC"),
            evaluationTypeHardwareBacked: evaluation.contains("HARDWARE_BACKED")
        )
        if let failure = scenario.requirements.check(integrity) { return .failure(failure) }
        return .success(integrity)
    }

    /// The leaf of the statement's chain when it signed the statement and the chain reaches a root, valid at `time`.
    private func verifiedLeaf(_ statement: SignedStatement, at time: Date) async -> Certificate? {
        guard let leaf = statement.chain.first, !self.trustRoots.isEmpty, statement.isSigned(by: leaf.publicKey) else {
            return nil
        }
        var verifier = Verifier(rootCertificates: CertificateStore(self.trustRoots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
        }
        let result = await verifier.validate(
            leaf: leaf,
            intermediates: CertificateStore(Array(statement.chain.dropFirst()))
        )
        guard case .validCertificate = result else { return nil }
        return leaf
    }

    /// The DNS names of the subject alternative names, or without them the common names (Apache's
    /// `DefaultHostnameVerifier`).
    static func names(_ certificate: Certificate) -> [String] {
        var alternative: [String] = []
        for name in ((try? certificate.extensions.subjectAlternativeNames) ?? nil) ?? SubjectAlternativeNames() {
            if case .dnsName(let dns) = name { alternative.append(dns) }
        }
        if !alternative.isEmpty { return alternative }
        return certificate.subject.flatMap { $0 }.filter { $0.type == .RDNAttributeType.commonName }.compactMap {
            String($0.value)
        }
    }

    /// `name` matches `hostname` exactly (ignoring case), or as a wildcard for the left-most label (`*.android.com`).
    static func matches(_ name: String, hostname: String) -> Bool {
        let name = name.lowercased()
        let hostname = hostname.lowercased()
        if name == hostname { return true }
        guard name.hasPrefix("*."), let dot = hostname.firstIndex(of: ".") else { return false }
        return hostname[dot...] == name.dropFirst() && !hostname[..<dot].isEmpty
    }
}

/// A compact JWS whose header carries its certificate chain (`x5c`, standard Base64 DER, leaf first); RS256 or
/// ES256.
struct SignedStatement: Sendable {
    var algorithm: String
    var chain: [Certificate]
    var signingInput: Data
    var payload: Data
    var signature: [UInt8]

    private struct Header: Decodable {
        var alg: String
        var x5c: [String]?
    }

    init?(compact: String) {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
            let payload = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2]),
            let encodedChain = header.x5c, !encodedChain.isEmpty, encodedChain.count <= 5
        else { return nil }
        var chain: [Certificate] = []
        for encoded in encodedChain {
            guard let der = Data(base64Encoded: encoded), let certificate = try? Certificate(derEncoded: Array(der))
            else { return nil }
            chain.append(certificate)
        }
        self.algorithm = header.alg
        self.chain = chain
        self.signingInput = Data("\(parts[0]).\(parts[1])".utf8)
        self.payload = Data(payload)
        self.signature = signature
    }

    /// Whether the signature is the statement's under `key` with the header's algorithm.
    func isSigned(by key: Certificate.PublicKey) -> Bool {
        switch self.algorithm {
        case "RS256":
            guard let rsa = _RSA.Signing.PublicKey(key) else { return false }
            return rsa.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: self.signature),
                for: self.signingInput,
                padding: .insecurePKCS1v1_5
            )
        case "ES256":
            guard let ec = P256.Signing.PublicKey(key) else { return false }
            return CompactJWS.isValidES256(self.signature, of: Array(self.signingInput), key: ec)
        default:
            return false
        }
    }
}
