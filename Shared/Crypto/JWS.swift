// Compact JWS (RFC 7515) as the fleet's tokens use it: ES256 signing, ES256 checking, and the protected header.

package import Crypto
import Foundation

/// The ES256 parts shared by the portal's officer tokens and the service tokens.
package enum CompactJWS {
    /// `header.claims.signature`, the JSON with sorted keys, signed with `key`; the signature is r ‖ s (RFC 7518 §3.4).
    package static func es256(
        header: [String: String],
        claims: some Encodable,
        key: P256.Signing.PrivateKey
    ) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let signingInput =
            Base64URL.encode(try encoder.encode(header)) + "." + Base64URL.encode(try encoder.encode(claims))
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Whether `signature`, an ES256 signature as JWS carries it (the 64 bytes r ‖ s, not DER), signs `input` under
    /// `key`.
    package static func isValidES256(_ signature: [UInt8], of input: [UInt8], key: P256.Signing.PublicKey) -> Bool {
        guard signature.count == 64, let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else {
            return false
        }
        return key.isValidSignature(parsed, for: input)
    }
}

/// `alg`, `kid`, `typ`, and whether the header carries or points to a key of its own or names critical extensions (`jwk`,
/// `jku`, `x5u`, `x5c`, `crit`): our verifiers use only their configured keys and know no extension, so such a header
/// is refused before any signature is checked.
package struct JWSHeader: Decodable, Sendable {
    package var alg: String
    package var kid: String?
    package var typ: String?
    private var crit: Present?
    private var jwk: Present?
    private var jku: Present?
    private var x5u: Present?
    private var x5c: Present?

    /// Whether the header names its own key or a critical extension.
    package var hasUnsupportedFields: Bool {
        self.crit != nil || self.jwk != nil || self.jku != nil || self.x5u != nil || self.x5c != nil
    }

    /// The header of `encoded` (the first, base64url part of a compact JWS); `nil` when it is not one.
    package static func decode(_ encoded: some StringProtocol) -> JWSHeader? {
        guard let bytes = Base64URL.decode(encoded) else { return nil }
        return try? JSONDecoder().decode(JWSHeader.self, from: Data(bytes))
    }

    /// Any JSON value; only its presence matters.
    private struct Present: Decodable, Sendable {
        init(from decoder: any Decoder) throws {}
    }
}
