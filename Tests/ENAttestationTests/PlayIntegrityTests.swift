// Play Integrity tokens made with the test's own keys: decrypted and verified locally, then the same checks as
// SafetyNet, with the verdicts mapped onto the reference's flags.

import Crypto
import ENAttestation
import ENCrypto
import ENTestSupport
import Foundation
import Testing

@Suite("Play Integrity attestation")
struct PlayIntegrityTests {
    static func verify(
        _ keys: PlayIntegrityKeys,
        _ fixture: AttestationFixture,
        _ token: String,
        scenario: AttestationScenario = .selfReport
    ) -> Result<AndroidIntegrity, AttestationFailure> {
        keys.verifier(fixture.policy).verify(
            token: token,
            salt: fixture.salt,
            payload: fixture.payload,
            scenario: scenario
        )
    }

    @Test("a recognised app on a strong device passes every scenario; its flags are all set")
    func genuine() throws {
        let keys = PlayIntegrityKeys()
        let fixture = try AttestationFixture()
        let token = try keys.token(PlayIntegrityKeys.verdict(fixture))
        for scenario in AttestationScenario.allCases {
            #expect(try Self.verify(keys, fixture, token, scenario: scenario).get().isStrong)
        }
    }

    @Test(
        "a token encrypted with another key, signed with another key, or altered: 401 JWS_SIGNATURE_VERIFICATION_FAILED"
    )
    func keys() throws {
        let keys = PlayIntegrityKeys()
        let fixture = try AttestationFixture()
        let verdict = PlayIntegrityKeys.verdict(fixture)
        let otherEncryption = try keys.token(verdict, decryption: SymmetricKey(size: .bits256))
        #expect(Self.verify(keys, fixture, otherEncryption) == .failure(.jwsSignatureVerificationFailed))
        let otherSignature = try keys.token(verdict, signing: P256.Signing.PrivateKey())
        #expect(Self.verify(keys, fixture, otherSignature) == .failure(.jwsSignatureVerificationFailed))
        var parts = try keys.token(verdict).split(separator: ".").map(String.init)
        parts[3] = String(parts[3].reversed())
        #expect(Self.verify(keys, fixture, parts.joined(separator: ".")) == .failure(.jwsSignatureVerificationFailed))
        #expect(Self.verify(keys, fixture, "") == .failure(.missingMandatoryAuthenticationFields))
    }

    @Test("the request hash of another payload 403 NONCE_MISMATCH; a classic nonce is taken too; none or empty 400")
    func nonce() throws {
        let keys = PlayIntegrityKeys()
        let fixture = try AttestationFixture()
        var verdict = PlayIntegrityKeys.verdict(fixture)
        var request = verdict["requestDetails"] as! [String: Any]
        request["requestHash"] = AttestationNonce.expected(salt: fixture.salt, payload: Data("x".utf8))
            .base64EncodedString()
        verdict["requestDetails"] = request
        #expect(Self.verify(keys, fixture, try keys.token(verdict)) == .failure(.nonceMismatch))
        request["requestHash"] = nil
        request["nonce"] = Base64URL.encode(AttestationNonce.expected(salt: fixture.salt, payload: fixture.payload))
        verdict["requestDetails"] = request
        #expect((try? Self.verify(keys, fixture, try keys.token(verdict)).get()) != nil)
        request["nonce"] = nil
        verdict["requestDetails"] = request
        #expect(Self.verify(keys, fixture, try keys.token(verdict)) == .failure(.missingMandatoryAuthenticationFields))
        // Empty is missing, as in the reference; an empty request hash beside a classic nonce leaves the nonce.
        request["requestHash"] = ""
        verdict["requestDetails"] = request
        #expect(Self.verify(keys, fixture, try keys.token(verdict)) == .failure(.missingMandatoryAuthenticationFields))
        request["nonce"] = ""
        verdict["requestDetails"] = request
        #expect(Self.verify(keys, fixture, try keys.token(verdict)) == .failure(.missingMandatoryAuthenticationFields))
        request["nonce"] = Base64URL.encode(AttestationNonce.expected(salt: fixture.salt, payload: fixture.payload))
        verdict["requestDetails"] = request
        #expect((try? Self.verify(keys, fixture, try keys.token(verdict)).get()) != nil)
    }

    @Test(
        "stale 403 ATTESTATION_EXPIRED; another package 403 APK_PACKAGE_NAME_MISMATCH; two digests 403 APK_CERTIFICATE_MISMATCH"
    )
    func app() throws {
        let keys = PlayIntegrityKeys()
        let fixture = try AttestationFixture()
        var verdict = PlayIntegrityKeys.verdict(fixture)
        var request = verdict["requestDetails"] as! [String: Any]
        request["timestampMillis"] = String(Int64((Date().timeIntervalSince1970 - 7201) * 1000))
        verdict["requestDetails"] = request
        #expect(Self.verify(keys, fixture, try keys.token(verdict)) == .failure(.attestationExpired))

        verdict = PlayIntegrityKeys.verdict(fixture)
        request = verdict["requestDetails"] as! [String: Any]
        request["requestPackageName"] = "com.example.other"
        verdict["requestDetails"] = request
        #expect(Self.verify(keys, fixture, try keys.token(verdict)) == .failure(.apkPackageNameMismatch))

        verdict = PlayIntegrityKeys.verdict(fixture)
        var app = verdict["appIntegrity"] as! [String: Any]
        let digest = Base64URL.encode(AttestationFixture.digest)
        app["certificateSha256Digest"] = [digest, digest]
        verdict["appIntegrity"] = app
        #expect(Self.verify(keys, fixture, try keys.token(verdict)) == .failure(.apkCertificateMismatch))
    }

    @Test("device verdicts: error logs and self-reports need strong integrity and a recognised app; analytics neither")
    func integrity() throws {
        let keys = PlayIntegrityKeys()
        let fixture = try AttestationFixture()
        let deviceOnly = try keys.token(PlayIntegrityKeys.verdict(fixture, verdicts: ["MEETS_DEVICE_INTEGRITY"]))
        #expect(
            Self.verify(keys, fixture, deviceOnly, scenario: .errorLog)
                == .failure(.evaluationTypeHardwareBackedRequired)
        )
        let basicOnly = try keys.token(PlayIntegrityKeys.verdict(fixture, verdicts: ["MEETS_BASIC_INTEGRITY"]))
        #expect(Self.verify(keys, fixture, basicOnly, scenario: .selfReport) == .failure(.ctsProfileMatchRequired))
        let none = try keys.token(PlayIntegrityKeys.verdict(fixture, verdicts: []))
        #expect(Self.verify(keys, fixture, none, scenario: .selfReport) == .failure(.basicIntegrityRequired))
        #expect(
            try Self.verify(keys, fixture, none, scenario: .analytics).get()
                == AndroidIntegrity(
                    basicIntegrity: false,
                    ctsProfileMatch: false,
                    evaluationTypeBasic: false,
                    evaluationTypeHardwareBacked: false
                )
        )
        var verdict = PlayIntegrityKeys.verdict(fixture)
        var app = verdict["appIntegrity"] as! [String: Any]
        app["appRecognitionVerdict"] = "UNRECOGNIZED_VERSION"
        verdict["appIntegrity"] = app
        let unrecognised = try keys.token(verdict)
        #expect(Self.verify(keys, fixture, unrecognised, scenario: .errorLog) == .failure(.appNotRecognized))
        #expect((try? Self.verify(keys, fixture, unrecognised, scenario: .survey).get()) != nil)
    }
}
