// SHA-256 of secrets (GUIDs, registration tokens, TANs, teleTANs), as stored and compared by the services.

import Crypto

/// SHA-256 digests rendered as lowercase hex, the only form in which secrets are stored (cwa-satellites §1.3).
package enum SecretHash {
    /// Lowercase hex SHA-256 of the UTF-8 bytes of `text`, exactly as given (no trimming, no case folding).
    package static func sha256Hex(_ text: some StringProtocol) -> String {
        Hex.encode(SHA256.hash(data: Array(text.utf8)))
    }

    /// Lowercase hex SHA-256 of raw bytes.
    package static func sha256Hex(bytes: some Sequence<UInt8>) -> String {
        Hex.encode(SHA256.hash(data: Array(bytes)))
    }
}
