// The short-lived signed tokens one service of the fleet presents to another on an internal port.

package import Crypto
package import Foundation
import Synchronization

/// Signs the service token a caller sends with each internal request: a compact JWS (ES256) whose claims are `iss`
/// (the caller's name), `aud` (the callee's name), `iat` and `exp` (`lifetime` later). A token is reused for
/// `reuse` of its lifetime, so a busy caller signs about once every half minute per callee instead of per request.
package final class ServiceTokenSigner: Sendable {
    package let issuer: String
    private let key: P256.Signing.PrivateKey
    private let lifetime: Int
    private let reuse: Int
    private let cache = Mutex<[String: (token: String, issuedAt: Int)]>([:])

    /// - Parameters:
    ///   - issuer: this service's name, e.g. `submission-service`; the callee looks the public key up by it.
    ///   - lifetime: seconds from `iat` to `exp`, at most `ServiceTokenVerifier.maxLifetime`.
    package init(issuer: String, key: P256.Signing.PrivateKey, lifetime: Int = 60) {
        precondition(lifetime > 1 && lifetime <= ServiceTokenVerifier.maxLifetime)
        self.issuer = issuer
        self.key = key
        self.lifetime = lifetime
        self.reuse = lifetime / 2
    }

    /// A signer with the PEM P-256 private key `pem` (SEC 1 or PKCS #8); `nil` when `pem` is not one.
    package convenience init?(issuer: String, pem: String) {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else { return nil }
        self.init(issuer: issuer, key: key)
    }

    /// A signer with a fresh random key: a stand-in where the key file could not be loaded (start-up then fails).
    package static func random(issuer: String) -> ServiceTokenSigner {
        ServiceTokenSigner(issuer: issuer, key: P256.Signing.PrivateKey())
    }

    /// The PEM of the public key callees trust this caller with.
    package var publicKeyPEM: String { self.key.publicKey.pemRepresentation }

    /// A token for `audience`, valid from `now` for at least half its lifetime.
    package func token(audience: String, now: Date) -> String {
        let seconds = Int(now.timeIntervalSince1970.rounded(.down))
        return self.cache.withLock { cache in
            if let cached = cache[audience], seconds >= cached.issuedAt, seconds - cached.issuedAt < self.reuse {
                return cached.token
            }
            let token = self.sign(audience: audience, issuedAt: seconds)
            cache[audience] = (token, seconds)
            return token
        }
    }

    private func sign(audience: String, issuedAt: Int) -> String {
        let claims = Claims(iss: self.issuer, aud: audience, iat: issuedAt, exp: issuedAt + self.lifetime)
        // Encoding strings and integers and signing with a valid in-memory P-256 key do not fail; an empty token would
        // only be refused by every callee.
        return
            (try? CompactJWS.es256(
                header: ["alg": "ES256", "typ": ServiceTokenVerifier.type],
                claims: claims,
                key: self.key
            )) ?? ""
    }

    fileprivate struct Claims: Codable {
        var iss: String
        var aud: String
        var iat: Int
        var exp: Int
    }
}

/// A caller's public key.
package typealias ServiceTokenPublicKey = P256.Signing.PublicKey

/// Checks a service token: ES256 only, signed by the key configured for the caller its `iss` names, `aud` this
/// service, `exp` in the future and at most `maxLifetime` after `iat` and after now, `iat` not in the future beyond
/// `leeway`. Verified tokens are remembered until they expire (up to `cacheLimit` of them), so a caller reusing its
/// token costs one signature check per token.
package final class ServiceTokenVerifier: Sendable {
    /// Longest accepted token lifetime, in seconds.
    package static let maxLifetime = 120
    /// Clock difference tolerated between caller and callee, in seconds.
    package static let leeway = 30
    /// The header's `typ`: no other token of the fleet (the portal's officer tokens are `JWT`) passes as a service
    /// token, even if an operator gave both the same key.
    package static let type = "cwa-service+jwt"
    private static let cacheLimit = 256

    package let audience: String
    private let callers: [String: [P256.Signing.PublicKey]]
    private let verified = Mutex<[String: (caller: String, expiresAt: Int)]>([:])

    /// - Parameters:
    ///   - audience: this service's name, e.g. `verification-service`.
    ///   - callers: the public keys of each caller, by its name (more than one while a caller's key is rotated).
    package init(audience: String, callers: [String: [P256.Signing.PublicKey]]) {
        self.audience = audience
        self.callers = callers
    }

    /// The P-256 public keys in `pem` (one or more `PUBLIC KEY` blocks); `nil` when there is none or one is not a
    /// P-256 public key.
    package static func publicKeys(pem: String) -> [P256.Signing.PublicKey]? {
        let end = "-----END PUBLIC KEY-----"
        let blocks = pem.components(separatedBy: end).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .filter { !$0.isEmpty }
        guard !blocks.isEmpty else { return nil }
        var keys: [P256.Signing.PublicKey] = []
        for block in blocks {
            guard let key = try? P256.Signing.PublicKey(pemRepresentation: block + "\n" + end) else { return nil }
            keys.append(key)
        }
        return keys
    }

    /// The names of the callers this service trusts.
    package var callerNames: Set<String> { Set(self.callers.keys) }

    /// The caller's name, or why the token is refused.
    package func verify(_ token: String, now: Date) throws(ServiceTokenError) -> String {
        let seconds = Int(now.timeIntervalSince1970.rounded(.down))
        if let known = self.verified.withLock({ $0[token] }) {
            guard seconds < known.expiresAt else { throw .expired }
            return known.caller
        }
        let (caller, expiresAt) = try self.check(token, now: seconds)
        self.verified.withLock { verified in
            if verified.count >= Self.cacheLimit {
                verified = verified.filter { seconds < $0.value.expiresAt }
                if verified.count >= Self.cacheLimit { verified.removeAll() }
            }
            verified[token] = (caller, expiresAt)
        }
        return caller
    }

    private struct Payload: Decodable {
        var iss: String?
        var aud: String?
        var iat: Int?
        var exp: Int?
    }

    private func check(_ token: String, now: Int) throws(ServiceTokenError) -> (String, Int) {
        guard token.utf8.count <= 2048 else { throw .malformed }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = JWSHeader.decode(parts[0]),
            let payloadBytes = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2])
        else { throw .malformed }
        guard header.alg == "ES256" else { throw .unsupportedAlgorithm }
        guard !header.hasUnsupportedFields, header.typ == Self.type else { throw .unsupportedHeader }
        guard let payload = try? JSONDecoder().decode(Payload.self, from: Data(payloadBytes)) else { throw .malformed }
        guard let caller = payload.iss, let keys = self.callers[caller] else { throw .unknownCaller }
        let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        guard keys.contains(where: { CompactJWS.isValidES256(signature, of: signingInput, key: $0) }) else {
            throw .badSignature
        }
        guard payload.aud == self.audience else { throw .wrongAudience }
        // Times beyond the year 9999 are refused before any arithmetic, which then cannot overflow.
        guard let iat = payload.iat, let exp = payload.exp, (0...253_402_300_799).contains(iat),
            (0...253_402_300_799).contains(exp)
        else { throw .missingTimes }
        guard now < exp else { throw .expired }
        guard iat <= now + Self.leeway else { throw .notYetValid }
        guard exp - iat <= Self.maxLifetime, exp - now <= Self.maxLifetime else { throw .lifetimeTooLong }
        return (caller, exp)
    }
}

/// Why a service token was refused; each answers 401.
package enum ServiceTokenError: Error, Equatable, CustomStringConvertible {
    case missing
    case malformed
    case unsupportedAlgorithm
    case unsupportedHeader
    case unknownCaller
    case badSignature
    case wrongAudience
    case missingTimes
    case expired
    case notYetValid
    case lifetimeTooLong

    package var description: String {
        switch self {
        case .missing: "no service token (X-CWA-Service-Token)"
        case .malformed: "the service token is not a well-formed JWS"
        case .unsupportedAlgorithm: "the service token's algorithm is not ES256"
        case .unsupportedHeader: "the service token's header is not a service token's (typ) or names keys or extensions"
        // One message for both, so a client without a key cannot learn which callers are configured.
        case .unknownCaller, .badSignature: "the service token's signature is not valid for its caller"
        case .wrongAudience: "the service token is meant for another service"
        case .missingTimes: "the service token has no valid iat or exp"
        case .expired: "the service token has expired"
        case .notYetValid: "the service token is not valid yet"
        case .lifetimeTooLong: "the service token is valid for longer than accepted"
        }
    }
}
