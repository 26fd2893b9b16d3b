// SafetyNet statements (cwa-satellites §4.2) with chains of the test's own: every check in the reference's order,
// with its code and status.

import ENAttestation
import ENCrypto
import ENTestSupport
import Foundation
import Testing
import X509

@Suite("SafetyNet attestation")
struct SafetyNetTests {
    static func verify(
        _ fixture: AttestationFixture,
        _ jws: String,
        scenario: AttestationScenario = .selfReport,
        roots: [Certificate]? = nil,
        policy: AndroidAttestationPolicy? = nil
    ) async -> Result<AndroidIntegrity, AttestationFailure> {
        await SafetyNetVerifier(trustRoots: roots ?? [fixture.root.certificate], policy: policy ?? fixture.policy)
            .verify(jws: jws, salt: fixture.salt, payload: fixture.payload, scenario: scenario)
    }

    @Test(
        "a genuine statement passes every scenario and yields its four flags (RSA and P-256 leaves)",
        arguments: [true, false]
    )
    func genuine(rsa: Bool) async throws {
        let fixture = try AttestationFixture(rsa: rsa)
        let jws = try fixture.safetyNetJWS(fixture.safetyNetClaims())
        for scenario in AttestationScenario.allCases {
            let integrity = try await Self.verify(fixture, jws, scenario: scenario).get()
            #expect(integrity.isStrong)
            #expect(integrity.evaluationTypeBasic)
        }
    }

    @Test(
        "a chain to another root, a leaf that did not sign, an altered claim, no x5c: 401 JWS_SIGNATURE_VERIFICATION_FAILED"
    )
    func signatureAndChain() async throws {
        let fixture = try AttestationFixture()
        let jws = try fixture.safetyNetJWS(fixture.safetyNetClaims())
        let otherRoot = try TestAuthority.root("Another root")
        #expect(
            await Self.verify(fixture, jws, roots: [otherRoot.certificate]) == .failure(.jwsSignatureVerificationFailed)
        )
        // Signed by the intermediate, while the x5c names the leaf first.
        let wrongSigner = try fixture.safetyNetJWS(fixture.safetyNetClaims(), signer: fixture.intermediate)
        #expect(await Self.verify(fixture, wrongSigner) == .failure(.jwsSignatureVerificationFailed))
        // A claim changed after signing.
        let parts = jws.split(separator: ".")
        var claims = fixture.safetyNetClaims()
        claims["ctsProfileMatch"] = false
        let altered = [
            String(parts[0]), Base64URL.encode(try JSONSerialization.data(withJSONObject: claims)),
            String(parts[2]),
        ].joined(separator: ".")
        #expect(await Self.verify(fixture, altered) == .failure(.jwsSignatureVerificationFailed))
        // A chain without the intermediate does not reach the root.
        let short = try fixture.safetyNetJWS(fixture.safetyNetClaims(), chain: [fixture.leaf])
        #expect(await Self.verify(fixture, short) == .failure(.jwsSignatureVerificationFailed))
        #expect(await Self.verify(fixture, "not.a.jws") == .failure(.jwsSignatureVerificationFailed))
        #expect(await Self.verify(fixture, "") == .failure(.missingMandatoryAuthenticationFields))
        #expect(AttestationFailure.jwsSignatureVerificationFailed.status == 401)
    }

    @Test("a leaf for another host: 403 FAILED_ATTESTATION_HOSTNAME_VALIDATION")
    func hostname() async throws {
        let fixture = try AttestationFixture(hostname: "attest.example.com")
        let result = await Self.verify(fixture, try fixture.safetyNetJWS(fixture.safetyNetClaims()))
        #expect(result == .failure(.failedAttestationHostnameValidation))
        #expect(AttestationFailure.failedAttestationHostnameValidation.status == 403)
    }

    @Test("a nonce of another payload 403 NONCE_MISMATCH; none or an empty one 400; none allowed when the check is off")
    func nonce() async throws {
        let fixture = try AttestationFixture()
        var claims = fixture.safetyNetClaims()
        claims["nonce"] = AttestationNonce.expected(salt: fixture.salt, payload: Data("other".utf8))
            .base64EncodedString()
        #expect(await Self.verify(fixture, try fixture.safetyNetJWS(claims)) == .failure(.nonceMismatch))
        claims["nonce"] = nil
        let missing = try fixture.safetyNetJWS(claims)
        #expect(await Self.verify(fixture, missing) == .failure(.missingMandatoryAuthenticationFields))
        claims["nonce"] = ""
        let empty = try fixture.safetyNetJWS(claims)
        #expect(
            await Self.verify(fixture, empty) == .failure(.missingMandatoryAuthenticationFields),
            "empty is missing"
        )
        var unchecked = fixture.policy
        unchecked.checksNonce = false
        #expect((try? await Self.verify(fixture, missing, policy: unchecked).get()) != nil)
    }

    @Test("a statement more than two hours old or ahead: 403 ATTESTATION_EXPIRED", arguments: [-7201.0, 7201.0])
    func stale(offset: Double) async throws {
        let fixture = try AttestationFixture()
        var claims = fixture.safetyNetClaims()
        claims["timestampMs"] = Int64((Date().timeIntervalSince1970 + offset) * 1000)
        #expect(await Self.verify(fixture, try fixture.safetyNetJWS(claims)) == .failure(.attestationExpired))
    }

    @Test("another package 403 APK_PACKAGE_NAME_MISMATCH; two digests or an unknown one 403 APK_CERTIFICATE_MISMATCH")
    func app() async throws {
        let fixture = try AttestationFixture()
        var claims = fixture.safetyNetClaims()
        claims["apkPackageName"] = "com.example.other"
        #expect(await Self.verify(fixture, try fixture.safetyNetJWS(claims)) == .failure(.apkPackageNameMismatch))
        claims = fixture.safetyNetClaims()
        let digest = AttestationFixture.digest.base64EncodedString()
        claims["apkCertificateDigestSha256"] = [digest, digest]
        #expect(await Self.verify(fixture, try fixture.safetyNetJWS(claims)) == .failure(.apkCertificateMismatch))
        claims["apkCertificateDigestSha256"] = [Data(repeating: 7, count: 32).base64EncodedString()]
        #expect(await Self.verify(fixture, try fixture.safetyNetJWS(claims)) == .failure(.apkCertificateMismatch))
    }

    @Test(
        "the integrity table: analytics and surveys need nothing; error logs and self-reports each missing flag with its code",
        arguments: [
            ("basicIntegrity", false, AttestationScenario.errorLog, AttestationFailure.basicIntegrityRequired),
            ("ctsProfileMatch", false, .errorLog, .ctsProfileMatchRequired),
            ("evaluationType", "BASIC", .errorLog, .evaluationTypeHardwareBackedRequired),
            ("basicIntegrity", false, .selfReport, .basicIntegrityRequired),
            ("ctsProfileMatch", false, .selfReport, .ctsProfileMatchRequired),
            ("evaluationType", "HARDWARE_BACKED", .selfReport, .evaluationTypeBasicRequired),
            ("evaluationType", "BASIC", .selfReport, .evaluationTypeHardwareBackedRequired),
        ] as [(String, any Sendable, AttestationScenario, AttestationFailure)]
    )
    func integrity(
        claim: String,
        value: any Sendable,
        scenario: AttestationScenario,
        failure: AttestationFailure
    )
        async throws
    {
        let fixture = try AttestationFixture()
        var claims = fixture.safetyNetClaims()
        claims[claim] = value
        let jws = try fixture.safetyNetJWS(claims)
        #expect(await Self.verify(fixture, jws, scenario: scenario) == .failure(failure))
        for lenient in [AttestationScenario.analytics, .survey] {
            #expect((try? await Self.verify(fixture, jws, scenario: lenient).get()) != nil)
        }
    }
}
