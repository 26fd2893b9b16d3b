// Service tokens: what a callee accepts and what it refuses.

import Crypto
import ENCrypto
import Foundation
import Testing

@Suite("Service tokens")
struct ServiceTokenTests {
    static let submissionKey = P256.Signing.PrivateKey()
    static let portalKey = P256.Signing.PrivateKey()
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func verifier() -> ServiceTokenVerifier {
        ServiceTokenVerifier(
            audience: "verification-service",
            callers: [
                "submission-service": [Self.submissionKey.publicKey],
                "portal-service": [P256.Signing.PrivateKey().publicKey, Self.portalKey.publicKey],
            ]
        )
    }

    /// A token with the given header and claims, signed by `key` (or with the given signature bytes).
    static func token(
        header: String = #"{"alg":"ES256","typ":"cwa-service+jwt"}"#,
        claims: String,
        key: P256.Signing.PrivateKey = Self.submissionKey
    ) throws -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try key.signature(for: Data(input.utf8)).rawRepresentation)
    }

    static func claims(
        iss: String = "submission-service",
        aud: String = "verification-service",
        iat: Int = 1_800_000_000,
        exp: Int = 1_800_000_060
    ) -> String {
        #"{"aud":"\#(aud)","exp":\#(exp),"iat":\#(iat),"iss":"\#(iss)"}"#
    }

    @Test("a signer's token names its caller; any key of a caller's list verifies (rotation)")
    func roundTrip() throws {
        let submission = ServiceTokenSigner(issuer: "submission-service", key: Self.submissionKey)
        let portal = ServiceTokenSigner(issuer: "portal-service", key: Self.portalKey)
        let verifier = Self.verifier()

        #expect(
            try verifier.verify(submission.token(audience: "verification-service", now: Self.now), now: Self.now)
                == "submission-service"
        )
        #expect(
            try verifier.verify(portal.token(audience: "verification-service", now: Self.now), now: Self.now)
                == "portal-service"
        )
        #expect(verifier.callerNames == ["submission-service", "portal-service"])
    }

    @Test("a signer reuses its token for half its lifetime, then signs a new one")
    func reuse() throws {
        let signer = ServiceTokenSigner(issuer: "submission-service", key: Self.submissionKey, lifetime: 60)
        let first = signer.token(audience: "verification-service", now: Self.now)
        let later = signer.token(audience: "verification-service", now: Self.now.addingTimeInterval(29))
        let fresh = signer.token(audience: "verification-service", now: Self.now.addingTimeInterval(30))
        let other = signer.token(audience: "test-result-service", now: Self.now)

        #expect(first == later)
        #expect(fresh != first)
        #expect(other != first)
        #expect(throws: ServiceTokenError.wrongAudience) { try Self.verifier().verify(other, now: Self.now) }
        // The second check of the same token comes from the verifier's memory, which forgets it at its expiry.
        let verifier = Self.verifier()
        #expect(try verifier.verify(fresh, now: Self.now.addingTimeInterval(89)) == "submission-service")
        #expect(throws: ServiceTokenError.expired) { try verifier.verify(fresh, now: Self.now.addingTimeInterval(90)) }
    }

    @Test("refused: another caller's name with one's own key, unknown callers, other audiences, tampering")
    func impersonation() throws {
        let verifier = Self.verifier()
        // The portal's key signing as submission: the signature does not match submission's key.
        let posing = try Self.token(claims: Self.claims(iss: "submission-service"), key: Self.portalKey)
        #expect(throws: ServiceTokenError.badSignature) { try verifier.verify(posing, now: Self.now) }
        let stranger = try Self.token(claims: Self.claims(iss: "monitoring"))
        #expect(throws: ServiceTokenError.unknownCaller) { try verifier.verify(stranger, now: Self.now) }
        // Both answer the same text, so a client without a key learns nothing about which callers exist.
        #expect(ServiceTokenError.unknownCaller.description == ServiceTokenError.badSignature.description)
        let elsewhere = try Self.token(claims: Self.claims(aud: "test-result-service"))
        #expect(throws: ServiceTokenError.wrongAudience) { try verifier.verify(elsewhere, now: Self.now) }

        let valid = try Self.token(claims: Self.claims())
        let parts = valid.split(separator: ".").map(String.init)
        let swapped = Base64URL.encode(Array(Self.claims(iss: "portal-service").utf8))
        #expect(throws: ServiceTokenError.badSignature) {
            try verifier.verify(parts[0] + "." + swapped + "." + parts[2], now: Self.now)
        }
        #expect(throws: ServiceTokenError.malformed) { try verifier.verify(parts[0] + "." + parts[1], now: Self.now) }
        #expect(throws: ServiceTokenError.malformed) { try verifier.verify("", now: Self.now) }
        #expect(throws: ServiceTokenError.malformed) {
            try verifier.verify(String(repeating: "a", count: 3000), now: Self.now)
        }
    }

    @Test("refused: alg none or HS256, embedded keys, missing times, expired, future, too long-lived")
    func claimsAndHeader() throws {
        let verifier = Self.verifier()
        let none =
            Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array(Self.claims().utf8)) + "."
        #expect(throws: ServiceTokenError.unsupportedAlgorithm) { try verifier.verify(none, now: Self.now) }
        let hs = try Self.token(header: #"{"alg":"HS256"}"#, claims: Self.claims())
        #expect(throws: ServiceTokenError.unsupportedAlgorithm) { try verifier.verify(hs, now: Self.now) }
        let jwk = try Self.token(header: #"{"alg":"ES256","typ":"cwa-service+jwt","jwk":{}}"#, claims: Self.claims())
        #expect(throws: ServiceTokenError.unsupportedHeader) { try verifier.verify(jwk, now: Self.now) }
        // An officer's bearer token has the same algorithm and claims, but not the type: signed with the same key, it
        // is still no service token.
        let bearer = try Self.token(header: #"{"alg":"ES256","typ":"JWT"}"#, claims: Self.claims())
        #expect(throws: ServiceTokenError.unsupportedHeader) { try verifier.verify(bearer, now: Self.now) }
        let huge = try Self.token(claims: Self.claims(iat: Int.min, exp: Int.max))
        #expect(throws: ServiceTokenError.missingTimes) { try verifier.verify(huge, now: Self.now) }
        let noTimes = try Self.token(claims: #"{"aud":"verification-service","iss":"submission-service"}"#)
        #expect(throws: ServiceTokenError.missingTimes) { try verifier.verify(noTimes, now: Self.now) }

        let valid = try Self.token(claims: Self.claims())
        #expect(throws: ServiceTokenError.expired) { try verifier.verify(valid, now: Self.now.addingTimeInterval(60)) }
        #expect(throws: ServiceTokenError.notYetValid) {
            try verifier.verify(valid, now: Self.now.addingTimeInterval(-31))
        }
        let long = try Self.token(claims: Self.claims(exp: 1_800_000_000 + 121))
        #expect(throws: ServiceTokenError.lifetimeTooLong) { try verifier.verify(long, now: Self.now) }
        // iat in the past but exp far ahead of now: still too long.
        let stale = try Self.token(claims: Self.claims(iat: 1_799_990_000, exp: 1_800_000_500))
        #expect(throws: ServiceTokenError.lifetimeTooLong) { try verifier.verify(stale, now: Self.now) }
    }

    @Test("PEM files with one or more P-256 public keys parse; anything else does not")
    func publicKeyFiles() {
        let one = Self.submissionKey.publicKey.pemRepresentation
        let two = one + "\n" + Self.portalKey.publicKey.pemRepresentation + "\n"
        #expect(ServiceTokenVerifier.publicKeys(pem: one)?.count == 1)
        #expect(ServiceTokenVerifier.publicKeys(pem: two)?.count == 2)
        #expect(ServiceTokenVerifier.publicKeys(pem: "") == nil)
        #expect(ServiceTokenVerifier.publicKeys(pem: Self.submissionKey.pemRepresentation) == nil)
        #expect(
            ServiceTokenVerifier.publicKeys(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----") == nil
        )
    }
}
