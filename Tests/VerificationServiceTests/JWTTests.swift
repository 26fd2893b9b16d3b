// Bearer-token verification and the role rules, without the HTTP layer.

import Crypto
import ENCrypto
import ENTestSupport
import Foundation
import Testing
import _CryptoExtras

@testable import VerificationService

@Suite("JWT verification")
struct JWTTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    let verifier = JWTVerifier(keys: try! JWTKeySet.parse(TestSigningKeys.shared.publicPEM))

    @Test("ES256 and RS256 tokens signed by configured keys verify, with their roles")
    func valid() throws {
        let es = try self.verifier.verify(
            TestJWT.es256(TestJWT.claims(roles: ["c19hotline"], now: self.now)),
            now: self.now
        )
        let rs = try self.verifier.verify(
            TestJWT.rs256(TestJWT.claims(roles: ["c19hotline_event", "x"], now: self.now)),
            now: self.now
        )

        #expect(es.roles == ["c19hotline"])
        #expect(rs.roles == ["c19hotline_event", "x"])
        #expect(es.expiresAt == self.now.addingTimeInterval(300))
    }

    @Test("forgeries and stale tokens are refused with the right reason")
    func refused() {
        let claims = TestJWT.claims(roles: ["c19hotline"], now: self.now)
        var future = claims
        future["nbf"] = self.now.timeIntervalSince1970 + 60
        let otherRSA = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
        let cases: [(String, JWTError)] = [
            (TestJWT.es256(claims, key: TestSigningKeys.shared.stranger), .badSignature),
            (TestJWT.rs256(claims, key: otherRSA), .badSignature),
            (TestJWT.es256(TestJWT.claims(roles: [], expiresIn: 0, now: self.now)), .expired),
            (TestJWT.es256(future), .notYetValid),
            (TestJWT.unsigned(claims), .unsupportedAlgorithm),
            (TestJWT.hs256WithPublicKey(claims), .unsupportedAlgorithm),
            (
                TestJWT.es256(claims, key: TestSigningKeys.shared.stranger, header: ["jwk": ["kty": "EC"]]),
                .unsupportedHeader
            ),
            ("a.b", .malformed),
            (TestJWT.es256(claims.merging(["exp": "tomorrow"]) { _, new in new }), .malformed),
            (TestJWT.es256(claims.merging(["nbf": ["not", "a", "number"]]) { _, new in new }), .malformed),
            ("!!.!!.!!", .malformed),
        ]
        for (token, reason) in cases {
            #expect(throws: reason) { try self.verifier.verify(token, now: self.now) }
        }
    }

    @Test("an absurd but numeric exp does not crash: it is refused as too long a lifetime")
    func hugeExpiry() throws {
        let claims = TestJWT.claims(roles: ["c19hotline"], now: self.now).merging(["exp": 1e300]) { _, new in new }
        #expect(throws: JWTError.lifetimeTooLong) { try self.verifier.verify(TestJWT.es256(claims), now: self.now) }
    }

    @Test("issuer, audience, a lifetime within the maximum (from iat) and a jti are required")
    func registeredClaims() throws {
        let claims = TestJWT.claims(roles: ["c19hotline"], now: self.now)
        func with(_ changes: [String: Any?]) -> String {
            var changed = claims
            for (name, value) in changes { changed[name] = value }
            return TestJWT.es256(changed)
        }
        let refused: [(String, JWTError)] = [
            (with(["iss": "someone-else"]), .wrongIssuer),
            (with(["iss": nil]), .wrongIssuer),
            (with(["aud": "distribution-service"]), .wrongAudience),
            (with(["aud": nil]), .wrongAudience),
            (with(["iat": nil]), .missingIssuedAt),
            (with(["exp": self.now.timeIntervalSince1970 + 301]), .lifetimeTooLong),
            // iat backdated to fit the maximum, exp still too far from now
            (
                with(["iat": self.now.timeIntervalSince1970 + 3000, "exp": self.now.timeIntervalSince1970 + 3100]),
                .lifetimeTooLong
            ),
            (with(["jti": nil]), .missingTokenID),
            (with(["jti": ""]), .missingTokenID),
        ]
        for (token, reason) in refused {
            #expect(throws: reason) { try self.verifier.verify(token, now: self.now) }
        }
        let listed = try self.verifier.verify(with(["aud": ["account", "verification-service"]]), now: self.now)
        #expect(listed.issuer == "portal-service")
        #expect(listed.tokenID == claims["jti"] as? String)

        let keycloak = JWTVerifier(
            keys: self.verifier.keys,
            policy: JWTPolicy(issuers: ["https://keycloak/realms/cwa"], audience: "cwa", maxLifetime: .seconds(3600))
        )
        #expect(throws: Never.self) {
            try keycloak.verify(
                with(["iss": "https://keycloak/realms/cwa", "aud": "cwa", "exp": self.now.timeIntervalSince1970 + 3600]
                ),
                now: self.now
            )
        }
    }

    @Test("a token is verified only with keys of its own algorithm: an RS256 token finds no EC key")
    func algorithmBinding() {
        let ecOnly = JWTVerifier(keys: try! JWTKeySet.parse(TestSigningKeys.shared.ec.publicKey.pemRepresentation))
        #expect(throws: JWTError.noMatchingKey) {
            try ecOnly.verify(TestJWT.rs256(TestJWT.claims(roles: ["c19hotline"], now: self.now)), now: self.now)
        }
    }

    @Test("JWKS documents: EC and RSA keys, kid selection, unusable keys skipped")
    func jwks() throws {
        let ec = TestSigningKeys.shared.ec.publicKey.rawRepresentation
        let rsa = try TestSigningKeys.shared.rsa.publicKey.getKeyPrimitives()
        let document: [String: Any] = [
            "keys": [
                [
                    "kty": "EC", "crv": "P-256", "kid": "ec-1", "use": "sig", "x": Base64URL.encode(ec.prefix(32)),
                    "y": Base64URL.encode(ec.suffix(32)),
                ],
                [
                    "kty": "RSA", "kid": "rsa-1", "alg": "RS256", "n": Base64URL.encode(rsa.modulus),
                    "e": Base64URL.encode(rsa.publicExponent),
                ],
                ["kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"],
                ["kty": "oct", "k": "c2VjcmV0"],
            ]
        ]
        let keys = try JWTKeySet.parse(
            String(decoding: try JSONSerialization.data(withJSONObject: document), as: UTF8.self)
        )
        let verifier = JWTVerifier(keys: keys)
        let claims = TestJWT.claims(roles: ["c19hotline"], now: self.now)

        #expect(keys.entries.map(\.keyID) == ["ec-1", "rsa-1"])
        #expect(throws: Never.self) {
            try verifier.verify(TestJWT.es256(claims, header: ["kid": "ec-1"]), now: self.now)
        }
        #expect(throws: Never.self) { try verifier.verify(TestJWT.rs256(claims), now: self.now) }
        #expect(throws: JWTError.noMatchingKey) {
            try verifier.verify(TestJWT.es256(claims, header: ["kid": "other"]), now: self.now)
        }
    }

    @Test("roles per type: TEST needs hotline or health authority, EVENT needs the event hotline")
    func roles() {
        #expect(TeleTANAuthorization.permits(roles: ["c19hotline"], type: .test))
        #expect(TeleTANAuthorization.permits(roles: ["c19healthauthority"], type: .test))
        #expect(!TeleTANAuthorization.permits(roles: ["c19hotline_event"], type: .test))
        #expect(TeleTANAuthorization.permits(roles: ["c19hotline_event"], type: .event))
        #expect(!TeleTANAuthorization.permits(roles: ["c19hotline", "c19healthauthority"], type: .event))
        #expect(!TeleTANAuthorization.permits(roles: [], type: .test))
    }
}
