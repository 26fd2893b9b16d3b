// Play Integrity verdicts, decrypted and verified locally (beyond the reference, which ended with SafetyNet): the
// token is a compact JWE (A256KW + A256GCM) around a compact JWS (ES256) of the verdict; the keys are the app's
// own, downloaded from the Play Console. The verdict then passes the same checks as a SafetyNet statement.

package import Crypto
import ENCrypto
package import Foundation

/// The parts of a Play Integrity verdict the checks read (field names of Google's verdict format).
struct PlayIntegrityVerdict: Decodable, Sendable {
    struct RequestDetails: Decodable, Sendable {
        var requestPackageName: String?
        /// Classic requests carry the app's nonce, standard requests its request hash: both are our nonce.
        var nonce: String?
        var requestHash: String?
        var timestampMillis: FlexibleInteger?
    }
    struct AppIntegrity: Decodable, Sendable {
        var appRecognitionVerdict: String?
        var packageName: String?
        var certificateSha256Digest: [String]?
    }
    struct DeviceIntegrity: Decodable, Sendable {
        var deviceRecognitionVerdict: [String]?
    }
    var requestDetails: RequestDetails?
    var appIntegrity: AppIntegrity?
    var deviceIntegrity: DeviceIntegrity?
}

/// An integer written as a JSON number or as a string of digits (Google writes `timestampMillis` as a string).
struct FlexibleInteger: Decodable, Sendable {
    var value: Int64

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            self.value = number
        } else if let text = try? container.decode(String.self), let number = Int64(text) {
            self.value = number
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an integer")
        }
    }
}

/// Verifies Play Integrity tokens with the app's decryption and verification keys.
package struct PlayIntegrityVerifier: Sendable {
    /// The AES-256 key that unwraps each token's content key (`PLAY_INTEGRITY_DECRYPTION_KEY`).
    package var decryptionKey: SymmetricKey
    /// The EC P-256 key whose signature the verdict carries (`PLAY_INTEGRITY_VERIFICATION_KEY`).
    package var verificationKey: P256.Signing.PublicKey
    package var policy: AndroidAttestationPolicy

    package init(
        decryptionKey: SymmetricKey,
        verificationKey: P256.Signing.PublicKey,
        policy: AndroidAttestationPolicy = AndroidAttestationPolicy()
    ) {
        self.decryptionKey = decryptionKey
        self.verificationKey = verificationKey
        self.policy = policy
    }

    /// The device's flags when `token` attests `payload` under `salt` for `scenario`, else the failure. The verdicts
    /// map onto the reference's flags: MEETS_BASIC_INTEGRITY (or better) is basic integrity and a basic evaluation,
    /// MEETS_DEVICE_INTEGRITY (or better) a matching CTS profile, MEETS_STRONG_INTEGRITY a hardware-backed
    /// evaluation. Scenarios that require any flag also require the app to be PLAY_RECOGNIZED.
    package func verify(
        token: String,
        salt: Data,
        payload: Data,
        scenario: AttestationScenario,
        now: Date = Date()
    ) -> Result<AndroidIntegrity, AttestationFailure> {
        guard !token.isEmpty else { return .failure(.missingMandatoryAuthenticationFields) }
        guard let jws = self.decrypt(token), let claims = self.verified(jws),
            let verdict = try? JSONDecoder().decode(PlayIntegrityVerdict.self, from: claims)
        else { return .failure(.jwsSignatureVerificationFailed) }
        let request = verdict.requestDetails
        if self.policy.checksNonce {
            // Missing and empty are the same to the reference (a blank field is a missing one).
            guard let nonce = [request?.requestHash, request?.nonce].compactMap({ $0 }).first(where: { !$0.isEmpty })
            else {
                return .failure(.missingMandatoryAuthenticationFields)
            }
            guard AttestationNonce.matches(nonce, expected: AttestationNonce.expected(salt: salt, payload: payload))
            else { return .failure(.nonceMismatch) }
        }
        let app = verdict.appIntegrity
        let requestedPackage = request?.requestPackageName ?? ""
        if let recognised = app?.packageName, recognised != requestedPackage {
            return .failure(.apkPackageNameMismatch)
        }
        if let failure = self.policy.checkApp(
            timestamp: Date(timeIntervalSince1970: Double(request?.timestampMillis?.value ?? 0) / 1000),
            packageName: requestedPackage,
            certificateDigests: (app?.certificateSha256Digest ?? []).map { decodeBase64($0) ?? Data() },
            now: now
        ) {
            return .failure(failure)
        }
        let requirements = scenario.requirements
        if requirements != IntegrityRequirements(), app?.appRecognitionVerdict != "PLAY_RECOGNIZED" {
            return .failure(.appNotRecognized)
        }
        let verdicts = Set(verdict.deviceIntegrity?.deviceRecognitionVerdict ?? [])
        let strong = verdicts.contains("MEETS_STRONG_INTEGRITY")
        let device = strong || verdicts.contains("MEETS_DEVICE_INTEGRITY")
        let basic = device || verdicts.contains("MEETS_BASIC_INTEGRITY")
        let integrity = AndroidIntegrity(
            basicIntegrity: basic,
            ctsProfileMatch: device,
            evaluationTypeBasic: basic,
            evaluationTypeHardwareBacked: strong
        )
        if let failure = requirements.check(integrity) { return .failure(failure) }
        return .success(integrity)
    }

    /// The compact JWS inside a compact JWE of `alg` A256KW and `enc` A256GCM (RFC 7516 §5.2), or `nil`.
    func decrypt(_ token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 5, let headerBytes = Base64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode([String: String].self, from: Data(headerBytes)),
            header["alg"] == "A256KW", header["enc"] == "A256GCM", header["zip"] == nil,
            let wrappedKey = Base64URL.decode(parts[1]), let iv = Base64URL.decode(parts[2]),
            let ciphertext = Base64URL.decode(parts[3]), let tag = Base64URL.decode(parts[4]), tag.count == 16,
            let contentKey = try? AES.KeyWrap.unwrap(wrappedKey, using: self.decryptionKey),
            contentKey.bitCount == 256, let nonce = try? AES.GCM.Nonce(data: iv),
            let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag),
            let plaintext = try? AES.GCM.open(box, using: contentKey, authenticating: Data(parts[0].utf8))
        else { return nil }
        return String(bytes: plaintext, encoding: .ascii)
    }

    /// The claims of a compact ES256 JWS signed with the verification key, or `nil`.
    func verified(_ jws: String) -> Data? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = JWSHeader.decode(parts[0]), header.alg == "ES256",
            !header.hasUnsupportedFields, let claims = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            CompactJWS.isValidES256(signature, of: Array("\(parts[0]).\(parts[1])".utf8), key: self.verificationKey)
        else { return nil }
        return Data(claims)
    }
}
