// The public keys teleTAN requests are signed with: PEM (public keys or certificates) or a JWKS document.

import Crypto
import ENCrypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Verification keys for JSON Web Tokens, each bound to the one algorithm it may verify.
struct JWTKeySet: Sendable {
    enum Key: Sendable {
        case es256(P256.Signing.PublicKey)
        case rs256(_RSA.Signing.PublicKey)

        var algorithm: String {
            switch self {
            case .es256: "ES256"
            case .rs256: "RS256"
            }
        }
    }

    struct Entry: Sendable {
        /// The JWKS `kid`, if any; a token naming a `kid` is verified only with keys of that id.
        var keyID: String?
        var key: Key
    }

    var entries: [Entry]

    /// Parses `text`: a JWKS object (`{"keys": [...]}`), or one or more PEM blocks (`PUBLIC KEY` with a P-256 or
    /// RSA key, or `CERTIFICATE`).
    static func parse(_ text: String) throws(JWTKeyError) -> JWTKeySet {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let entries = trimmed.hasPrefix("{") ? try Self.parseJWKS(trimmed) : try Self.parsePEM(trimmed)
        guard !entries.isEmpty else { throw JWTKeyError("contains no usable ES256 or RS256 public key") }
        return JWTKeySet(entries: entries)
    }

    private static func parsePEM(_ text: String) throws(JWTKeyError) -> [Entry] {
        let blocks: [PEMDocument]
        do {
            blocks = try PEMDocument.parseMultiple(pemString: text)
        } catch {
            throw JWTKeyError("is neither a JWKS document nor PEM")
        }
        var entries: [Entry] = []
        for block in blocks {
            switch block.discriminator {
            case "PUBLIC KEY":
                if let key = try? P256.Signing.PublicKey(derRepresentation: block.derBytes) {
                    entries.append(Entry(key: .es256(key)))
                } else if let key = try? _RSA.Signing.PublicKey(derRepresentation: block.derBytes) {
                    entries.append(Entry(key: .rs256(key)))
                } else {
                    throw JWTKeyError("has a PUBLIC KEY that is neither P-256 nor RSA (2048 bits or more)")
                }
            case "CERTIFICATE":
                guard let certificate = try? Certificate(derEncoded: block.derBytes) else {
                    throw JWTKeyError("has a CERTIFICATE that cannot be parsed")
                }
                entries.append(Entry(key: try Self.key(of: certificate)))
            default:
                throw JWTKeyError("has a PEM block of type \(block.discriminator); expected PUBLIC KEY or CERTIFICATE")
            }
        }
        return entries
    }

    private struct JWKS: Decodable {
        struct JWK: Decodable {
            var kty: String
            var kid: String?
            var use: String?
            var alg: String?
            var crv: String?
            var x: String?
            var y: String?
            var n: String?
            var e: String?
            var x5c: [String]?
        }

        var keys: [JWK]
    }

    /// Keys with `use` other than `sig`, or an `alg` other than ES256/RS256, are skipped; a key that claims to be
    /// usable but cannot be read is an error.
    private static func parseJWKS(_ text: String) throws(JWTKeyError) -> [Entry] {
        let document: JWKS
        do {
            document = try JSONDecoder().decode(JWKS.self, from: Data(text.utf8))
        } catch {
            throw JWTKeyError("is not a JWKS document ({\"keys\": [...]})")
        }
        var entries: [Entry] = []
        for (index, jwk) in document.keys.enumerated() {
            if let use = jwk.use, use != "sig" { continue }
            if let alg = jwk.alg, alg != "ES256", alg != "RS256" { continue }
            guard let key = try Self.key(of: jwk, index: index) else { continue }
            if let alg = jwk.alg, alg != key.algorithm {
                throw JWTKeyError("key \(index) is declared \(alg) but holds a key for \(key.algorithm)")
            }
            entries.append(Entry(keyID: jwk.kid, key: key))
        }
        return entries
    }

    private static func key(of jwk: JWKS.JWK, index: Int) throws(JWTKeyError) -> Key? {
        switch jwk.kty {
        case "EC":
            guard jwk.crv == "P-256", let x = jwk.x.flatMap(Base64URL.decode), let y = jwk.y.flatMap(Base64URL.decode),
                x.count == 32, y.count == 32,
                let key = try? P256.Signing.PublicKey(rawRepresentation: x + y)
            else { throw JWTKeyError("key \(index) is not a valid P-256 key") }
            return .es256(key)
        case "RSA":
            if let n = jwk.n.flatMap(Base64URL.decode), let e = jwk.e.flatMap(Base64URL.decode) {
                guard let key = try? _RSA.Signing.PublicKey(n: n, e: e) else {
                    throw JWTKeyError("key \(index) is not a valid RSA key (2048 bits or more)")
                }
                return .rs256(key)
            }
            // Keycloak also publishes the certificate; the reference reads the key from `x5c[0]` (§1.4).
            guard let first = jwk.x5c?.first, let der = Data(base64Encoded: first),
                let certificate = try? Certificate(derEncoded: Array(der))
            else {
                throw JWTKeyError("key \(index) has neither n/e nor a readable x5c certificate")
            }
            return try Self.key(of: certificate)
        default:
            return nil
        }
    }

    private static func key(of certificate: Certificate) throws(JWTKeyError) -> Key {
        if let key = P256.Signing.PublicKey(certificate.publicKey) { return .es256(key) }
        if let key = _RSA.Signing.PublicKey(certificate.publicKey) { return .rs256(key) }
        throw JWTKeyError("has a certificate whose key is neither P-256 nor RSA")
    }
}

/// The key material is unusable; the message says why without quoting it.
struct JWTKeyError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
