// Verification of the bearer tokens that authorise teleTAN creation (cwa-satellites §1.4).

import Crypto
import ENCrypto
import Foundation
import _CryptoExtras

/// Checks a compact JWS: ES256 or RS256 only, with a configured key of exactly that type, an `exp` in the future
/// and an `nbf` (if present) in the past. `alg: none`, HMAC algorithms and headers that carry or point to their
/// own keys (`jwk`, `jku`, `x5u`, `x5c`) are refused, so neither an unsigned token nor a key confusion passes.
struct JWTVerifier: Sendable {
    let keys: JWTKeySet

    /// What a verified token says.
    struct Claims: Sendable, Equatable {
        /// `realm_access.roles` (Keycloak's realm roles).
        var roles: Set<String>
        var expiresAt: Date
    }

    private struct Header: Decodable {
        var alg: String
        var kid: String?
        var crit: [String]?
        var jwk: AnyField?
        var jku: AnyField?
        var x5u: AnyField?
        var x5c: AnyField?
    }

    private struct Payload: Decodable {
        struct RealmAccess: Decodable { var roles: [String]? }
        var exp: Double?
        var nbf: Double?
        var realm_access: RealmAccess?
    }

    /// Accepts any JSON value; only its presence matters.
    private struct AnyField: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    func verify(_ token: String, now: Date) throws(JWTError) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let payloadBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw .malformed }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else { throw .malformed }
        guard header.alg == "ES256" || header.alg == "RS256" else { throw .unsupportedAlgorithm }
        guard header.crit == nil, header.jwk == nil, header.jku == nil, header.x5u == nil, header.x5c == nil else {
            throw .unsupportedHeader
        }

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
        return Claims(roles: Set(payload.realm_access?.roles ?? []), expiresAt: expiresAt)
    }

    private static func isValid(_ signature: [UInt8], of input: [UInt8], with key: JWTKeySet.Key) -> Bool {
        switch key {
        case .es256(let key):
            // JWS carries ECDSA signatures as the 64-byte concatenation r ‖ s (RFC 7518 §3.4), not DER.
            guard signature.count == 64, let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            else { return false }
            return key.isValidSignature(parsed, for: input)
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

    var description: String {
        switch self {
        case .malformed: "the bearer token is not a well-formed JWT"
        case .unsupportedAlgorithm: "the bearer token's algorithm is not accepted (ES256 or RS256)"
        case .unsupportedHeader: "the bearer token's header names keys or extensions that are not accepted"
        case .noMatchingKey, .badSignature: "the bearer token's signature is not valid"
        case .missingExpiry: "the bearer token has no expiry"
        case .expired: "the bearer token has expired"
        case .notYetValid: "the bearer token is not valid yet"
        }
    }
}
