// What an Android attestation proves, however it arrives (SafetyNet JWS or Play Integrity token), and the rules every
// scenario applies to it (cwa-satellites §4.2).

import Crypto
package import Foundation

/// Why a request is donated: each scenario asks a different strength of device proof (cwa-satellites §4.2, step 9).
package enum AttestationScenario: String, Sendable, CaseIterable {
    /// Analytics (`dat`).
    case analytics
    /// Survey OTP (EDUS, `otp`).
    case survey
    /// Error-log sharing OTP (ELS, `els`).
    case errorLog
    /// Self-report submission OTP (SRS, `srs`).
    case selfReport

    /// What the device's verdict must include.
    package var requirements: IntegrityRequirements {
        switch self {
        case .analytics, .survey: IntegrityRequirements()
        case .errorLog:
            IntegrityRequirements(basicIntegrity: true, ctsProfileMatch: true, evaluationTypeHardwareBacked: true)
        case .selfReport:
            IntegrityRequirements(
                basicIntegrity: true,
                ctsProfileMatch: true,
                evaluationTypeBasic: true,
                evaluationTypeHardwareBacked: true
            )
        }
    }
}

/// The four device flags of the reference's integrity table; an OTP keeps them (its `strongClientIntegrityCheck`).
package struct AndroidIntegrity: Sendable, Equatable {
    package var basicIntegrity: Bool
    package var ctsProfileMatch: Bool
    package var evaluationTypeBasic: Bool
    package var evaluationTypeHardwareBacked: Bool

    package init(
        basicIntegrity: Bool,
        ctsProfileMatch: Bool,
        evaluationTypeBasic: Bool,
        evaluationTypeHardwareBacked: Bool
    ) {
        self.basicIntegrity = basicIntegrity
        self.ctsProfileMatch = ctsProfileMatch
        self.evaluationTypeBasic = evaluationTypeBasic
        self.evaluationTypeHardwareBacked = evaluationTypeHardwareBacked
    }

    /// Basic integrity, a matching CTS profile and a hardware-backed evaluation (the edus service's rule).
    package var isStrong: Bool { self.basicIntegrity && self.ctsProfileMatch && self.evaluationTypeHardwareBacked }
}

/// The flags a scenario needs; a missing one fails with its own code, in the reference's order.
package struct IntegrityRequirements: Sendable, Equatable {
    package var basicIntegrity = false
    package var ctsProfileMatch = false
    package var evaluationTypeBasic = false
    package var evaluationTypeHardwareBacked = false

    package func check(_ integrity: AndroidIntegrity) -> AttestationFailure? {
        if self.basicIntegrity, !integrity.basicIntegrity { return .basicIntegrityRequired }
        if self.ctsProfileMatch, !integrity.ctsProfileMatch { return .ctsProfileMatchRequired }
        if self.evaluationTypeBasic, !integrity.evaluationTypeBasic { return .evaluationTypeBasicRequired }
        if self.evaluationTypeHardwareBacked, !integrity.evaluationTypeHardwareBacked {
            return .evaluationTypeHardwareBackedRequired
        }
        return nil
    }
}

/// A refused attestation: the reference's error code (`PpacErrorCode`) and its status. Codes name no content.
package enum AttestationFailure: String, Error, Sendable, CaseIterable {
    case missingMandatoryAuthenticationFields = "MISSING_MANDATORY_AUTHENTICATION_FIELDS"
    case jwsSignatureVerificationFailed = "JWS_SIGNATURE_VERIFICATION_FAILED"
    case failedAttestationHostnameValidation = "FAILED_ATTESTATION_HOSTNAME_VALIDATION"
    case nonceMismatch = "NONCE_MISMATCH"
    case attestationExpired = "ATTESTATION_EXPIRED"
    case apkPackageNameMismatch = "APK_PACKAGE_NAME_MISMATCH"
    case apkCertificateMismatch = "APK_CERTIFICATE_MISMATCH"
    case basicIntegrityRequired = "BASIC_INTEGRITY_REQUIRED"
    case ctsProfileMatchRequired = "CTS_PROFILE_MATCH_REQUIRED"
    case evaluationTypeBasicRequired = "EVALUATION_TYPE_BASIC_REQUIRED"
    case evaluationTypeHardwareBackedRequired = "EVALUATION_TYPE_HARDWARE_BACKED_REQUIRED"
    /// Play Integrity only (beyond the reference): Google Play does not recognise the app that asked.
    case appNotRecognized = "APP_NOT_RECOGNIZED"

    /// The reference's HTTP status for the code.
    package var status: Int {
        switch self {
        case .missingMandatoryAuthenticationFields: 400
        case .jwsSignatureVerificationFailed: 401
        default: 403
        }
    }
}

/// The settings both Android verifiers share (cwa-satellites §4.2, steps 5–8).
package struct AndroidAttestationPolicy: Sendable {
    /// `allowed-apk-package-names`.
    package var packageNames: Set<String> = ["de.rki.coronawarnapp"]
    /// SHA-256 digests of the app's signing certificate (`allowed-apk-certificate-digests`), as bytes.
    package var certificateDigests: Set<Data> = [
        Data(base64Encoded: "Dday+17d9vY5YtsnHu1+9QTHd9l3LUhEcqzweVOe5zk=") ?? Data()
    ]
    /// Whether the certificate digest is checked (the reference can switch it off).
    package var checksCertificateDigest = true
    /// Whether the nonce is checked (`disable-nonce-check` switches it off).
    package var checksNonce = true
    /// The largest distance of the attestation's time from now (`attestation-validity`, 7200 s).
    package var validity: TimeInterval = 7200

    package init() {}

    /// Steps 6–8: the time, the package and the certificate digest (exactly one, and allowed).
    func checkApp(timestamp: Date, packageName: String, certificateDigests: [Data], now: Date) -> AttestationFailure? {
        guard abs(timestamp.timeIntervalSince(now)) <= self.validity else { return .attestationExpired }
        guard self.packageNames.contains(packageName) else { return .apkPackageNameMismatch }
        if self.checksCertificateDigest {
            guard certificateDigests.count == 1, self.certificateDigests.contains(certificateDigests[0]) else {
                return .apkCertificateMismatch
            }
        }
        return nil
    }
}

/// The nonce that binds an attestation to its request: Base64(SHA-256(salt ‖ payload)), the payload being the
/// protobuf serialisation of the request's `payload` message (cwa-satellites §4.2, step 5).
package enum AttestationNonce {
    package static func expected(salt: some DataProtocol, payload: some DataProtocol) -> Data {
        var hash = SHA256()
        hash.update(data: salt)
        hash.update(data: payload)
        return Data(hash.finalize())
    }

    /// Whether `claimed` (standard or URL-safe Base64, padded or not) is `expected`.
    static func matches(_ claimed: String, expected: Data) -> Bool {
        guard let bytes = decodeBase64(claimed) else { return false }
        return bytes == expected
    }
}

/// Standard or URL-safe Base64, padded or not.
package func decodeBase64(_ text: String) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.utf8.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64)
}
