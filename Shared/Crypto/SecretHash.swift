// SHA-256 of secrets (GUIDs, registration tokens, TANs, teleTANs), as stored and compared by the services.

import Crypto

/// SHA-256 digests rendered as lowercase hex, the only form in which secrets are stored (cwa-satellites §1.3).
package enum SecretHash {
    /// Lowercase hex SHA-256 of the UTF-8 bytes of `text`, exactly as given (no trimming, no case folding).
    package static func sha256Hex(_ text: some StringProtocol) -> String {
        Hex.encode(SHA256.hash(data: Array(text.utf8)))
    }

    /// Whether `text` has the form of what `sha256Hex` returns: 64 lower-case hex digits.
    package static func isSHA256Hex(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Lowercase hex SHA-256 of raw bytes.
    package static func sha256Hex(bytes: some Sequence<UInt8>) -> String {
        Hex.encode(SHA256.hash(data: Array(bytes)))
    }
}
