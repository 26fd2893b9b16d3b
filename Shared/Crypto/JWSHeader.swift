// The protected header of a compact JWS, as both token verifiers read it.

import Foundation

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
