// The short-lived ES256 token the portal signs for verification-service, and the JWKS that publishes its key.

import Crypto
import ENCrypto
import Foundation

/// Signs compact JWS tokens that verification-service accepts for `POST /version/v1/tan/teletan`: the officer's
/// roles in `realm_access.roles` (the Keycloak claim the reference used), `iss` portal-service, `aud`
/// verification-service, a random `jti` (verification spends it on the teleTAN it creates), valid for 60 seconds.
struct PortalJWTSigner: Sendable {
    let key: P256.Signing.PrivateKey
    let keyID: String
    static let lifetime: TimeInterval = 60

    func token(subject: String, roles: [String], now: Date) throws -> String {
        let header: [String: String] = ["alg": "ES256", "typ": "JWT", "kid": self.keyID]
        let issuedAt = Int(now.timeIntervalSince1970)
        let claims = Claims(
            iss: "portal-service",
            aud: "verification-service",
            jti: UUID().uuidString.lowercased(),
            sub: subject,
            iat: issuedAt,
            exp: issuedAt + Int(Self.lifetime),
            realm_access: .init(roles: roles.sorted())
        )
        return try CompactJWS.es256(header: header, claims: claims, key: self.key)
    }

    /// `{"keys":[{…}]}` with the public key as a JWK (RFC 7517/7518).
    var jwks: String {
        let raw = self.key.publicKey.rawRepresentation
        let jwk: [String: String] = [
            "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": self.keyID,
            "x": Base64URL.encode(raw.prefix(32)), "y": Base64URL.encode(raw.suffix(32)),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = (try? encoder.encode(["keys": [jwk]])) ?? Data("{\"keys\":[]}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private struct Claims: Encodable {
        struct RealmAccess: Encodable { var roles: [String] }
        var iss: String
        var aud: String
        var jti: String
        var sub: String
        var iat: Int
        var exp: Int
        var realm_access: RealmAccess
    }
}
