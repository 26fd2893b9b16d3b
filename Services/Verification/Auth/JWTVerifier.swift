// Verification of the bearer tokens that authorise teleTAN creation (cwa-satellites §1.4).

import Crypto
import ENCrypto
import ENServiceKit
import Foundation
import _CryptoExtras

/// What a bearer token must say besides its signature: who issued it, for whom, and for how long at most.
struct JWTPolicy: Sendable, Equatable {
    /// Accepted `iss` values (`TELETAN_JWT_ISSUERS`).
    var issuers: Set<String> = ["portal-service"]
    /// The `aud` a token must name (`TELETAN_JWT_AUDIENCE`); a string or one entry of an array.
    var audience = "verification-service"
    /// Longest a token may be valid: `exp` at most this after `iat`, and after now (`TELETAN_JWT_MAX_LIFETIME`).
    var maxLifetime: Duration = .seconds(300)
}

/// Checks a compact JWS: ES256 or RS256 only, with a configured key of exactly that type, an `exp` in the future
/// and an `nbf` (if present) in the past; then the policy's `iss`, `aud` and maximum lifetime (from a required `iat`),
/// and a `jti` (which the teleTAN creation spends, so a token creates one teleTAN at most). `alg: none`, HMAC
/// algorithms and headers that carry or point to their own keys (`jwk`, `jku`, `x5u`, `x5c`) are refused, so neither
/// an unsigned token nor a key confusion passes.
struct JWTVerifier: Sendable {
    let keys: JWTKeySet
    var policy = JWTPolicy()

    /// What a verified token says.
    struct Claims: Sendable, Equatable {
        /// `realm_access.roles` (Keycloak's realm roles).
        var roles: Set<String>
        var expiresAt: Date
        var issuer: String = ""
        /// `jti`: unique per token.
        var tokenID: String = ""
    }

    private struct Payload: Decodable {
        struct RealmAccess: Decodable { var roles: [String]? }
        var exp: Double?
        var nbf: Double?
        var iat: Double?
        var iss: String?
        var aud: Audience?
        var jti: String?
        var realm_access: RealmAccess?
    }

    /// `aud`: one string or an array of them (RFC 7519 §4.1.3).
    private struct Audience: Decodable {
        var values: [String]

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                self.values = [one]
            } else {
                self.values = try container.decode([String].self)
            }
        }
    }

    func verify(_ token: String, now: Date) throws(JWTError) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = JWSHeader.decode(parts[0]),
            let payloadBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw .malformed }
        guard header.alg == "ES256" || header.alg == "RS256" else { throw .unsupportedAlgorithm }
        guard !header.hasUnsupportedFields else { throw .unsupportedHeader }

        let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        let candidates = self.keys.entries.filter { entry in
            entry.key.algorithm == header.alg && (header.kid == nil || entry.keyID == nil || entry.keyID == header.kid)
        }
        guard !candidates.isEmpty else { throw .noMatchingKey }
        guard candidates.contains(where: { Self.isValid(signature, of: signingInput, with: $0.key) }) else {
            throw .badSignature
        }

        guard let payload = try? JSONDecoder().decode(Payload.self, from: Data(payloadBytes)) else { throw .malformed }
        guard let exp = payload.exp else { throw .missingExpiry }
        let expiresAt = Date(timeIntervalSince1970: exp)
        guard now < expiresAt else { throw .expired }
        if let nbf = payload.nbf, now < Date(timeIntervalSince1970: nbf) { throw .notYetValid }
        guard let issuer = payload.iss, self.policy.issuers.contains(issuer) else { throw .wrongIssuer }
        guard payload.aud?.values.contains(self.policy.audience) == true else { throw .wrongAudience }
        guard let iat = payload.iat else { throw .missingIssuedAt }
        let longest = self.policy.maxLifetime.timeInterval
        guard exp - iat <= longest, expiresAt.timeIntervalSince(now) <= longest else { throw .lifetimeTooLong }
        guard let tokenID = payload.jti, (1...256).contains(tokenID.utf8.count) else { throw .missingTokenID }
        return Claims(
            roles: Set(payload.realm_access?.roles ?? []),
            expiresAt: expiresAt,
            issuer: issuer,
            tokenID: tokenID
        )
    }

    private static func isValid(_ signature: [UInt8], of input: [UInt8], with key: JWTKeySet.Key) -> Bool {
        switch key {
        case .es256(let key):
            return CompactJWS.isValidES256(signature, of: input, key: key)
        case .rs256(let key):
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: input,
                padding: .insecurePKCS1v1_5
            )
        }
    }
}

/// Why a bearer token was refused; all of them answer 401.
enum JWTError: Error, Equatable, CustomStringConvertible {
    case malformed
    case unsupportedAlgorithm
    case unsupportedHeader
    case noMatchingKey
    case badSignature
    case missingExpiry
    case expired
    case notYetValid
    case wrongIssuer
    case wrongAudience
    case missingIssuedAt
    case lifetimeTooLong
    case missingTokenID
    /// The token created a teleTAN already.
    case replayed

    var description: String {
        switch self {
        case .malformed: "the bearer token is not a well-formed JWT"
        case .unsupportedAlgorithm: "the bearer token's algorithm is not accepted (ES256 or RS256)"
        case .unsupportedHeader: "the bearer token's header names keys or extensions that are not accepted"
        case .noMatchingKey, .badSignature: "the bearer token's signature is not valid"
        case .missingExpiry: "the bearer token has no expiry"
        case .expired: "the bearer token has expired"
        case .notYetValid: "the bearer token is not valid yet"
        case .wrongIssuer: "the bearer token's issuer is not accepted"
        case .wrongAudience: "the bearer token is not meant for verification-service (aud)"
        case .missingIssuedAt: "the bearer token has no iat"
        case .lifetimeTooLong: "the bearer token is valid for longer than accepted"
        case .missingTokenID: "the bearer token has no jti"
        case .replayed: "the bearer token was used already"
        }
    }
}
