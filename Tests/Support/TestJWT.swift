// Bearer tokens for the teleTAN endpoint: well-formed ones and the classic forgeries.

package import Crypto
import ENCrypto
package import Foundation
package import _CryptoExtras

/// Signing keys for bearer tokens, made once per test run.
package struct TestSigningKeys: Sendable {
    package let ec = P256.Signing.PrivateKey()
    package let rsa = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    /// A key the service does not know.
    package let stranger = P256.Signing.PrivateKey()

    package static let shared = TestSigningKeys()

    /// The public keys as PEM, the form of `TELETAN_JWT_PUBLIC_KEYS`.
    package var publicPEM: String { self.ec.publicKey.pemRepresentation + "\n" + self.rsa.publicKey.pemRepresentation }
}

/// Compact JWS tokens for tests.
package enum TestJWT {
    package static func claims(
        roles: [String],
        expiresIn: TimeInterval = 300,
        now: Date = Date(timeIntervalSince1970: 1_700_000_000)
    ) -> [String: Any] {
        [
            "exp": now.timeIntervalSince1970 + expiresIn, "iat": now.timeIntervalSince1970,
            "iss": "portal-service", "aud": "verification-service", "jti": UUID().uuidString,
            "realm_access": ["roles": roles],
        ]
    }

    package static func segment(_ object: [String: Any]) -> String {
        Base64URL.encode(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    package static func es256(
        _ claims: [String: Any],
        key: P256.Signing.PrivateKey = TestSigningKeys.shared.ec,
        header: [String: Any] = [:]
    ) -> String {
        let input =
            self.segment(["alg": "ES256", "typ": "JWT"].merging(header) { _, new in new }) + "." + self.segment(claims)
        let signature = try! key.signature(for: Array(input.utf8)).rawRepresentation
        return input + "." + Base64URL.encode(signature)
    }

    package static func rs256(
        _ claims: [String: Any],
        key: _RSA.Signing.PrivateKey = TestSigningKeys.shared.rsa
    ) -> String {
        let input = self.segment(["alg": "RS256", "typ": "JWT"]) + "." + self.segment(claims)
        let signature = try! key.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5).rawRepresentation
        return input + "." + Base64URL.encode(signature)
    }

    package static func unsigned(_ claims: [String: Any]) -> String {
        self.segment(["alg": "none", "typ": "JWT"]) + "." + self.segment(claims) + "."
    }

    /// HS256 keyed with the text of the public keys: the classic algorithm-confusion forgery.
    package static func hs256WithPublicKey(_ claims: [String: Any]) -> String {
        let input = self.segment(["alg": "HS256", "typ": "JWT"]) + "." + self.segment(claims)
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array(input.utf8),
            using: SymmetricKey(data: Array(TestSigningKeys.shared.publicPEM.utf8))
        )
        return input + "." + Base64URL.encode(Array(mac))
    }
}
