// SHA-256 thumbprints of X.509 certificates, the identity of labs and federation partners.

import Crypto

/// The SHA-256 of a certificate's DER encoding as 64 lowercase hex characters (cwa-satellites §2.3, §5.1).
package struct CertificateThumbprint: Hashable, Sendable, CustomStringConvertible {
    /// 64 lowercase hex characters.
    package let hex: String

    /// The thumbprint of a DER-encoded certificate.
    package init(derEncodedCertificate der: some Sequence<UInt8>) {
        self.hex = SecretHash.sha256Hex(bytes: der)
    }

    /// Parses a configured thumbprint: 64 hex characters in either case, optionally in `AA:BB:…` form
    /// (as `openssl x509 -fingerprint -sha256` prints it). Returns `nil` for anything else.
    package init?(parsing text: some StringProtocol) {
        let compact = text.trimmingWhitespace().filter { $0 != ":" }
        guard Hex.isHex(compact, count: 64) else { return nil }
        self.hex = compact.lowercased()
    }

    package var description: String { self.hex }
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and line breaks.
    fileprivate func trimmingWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        let text = Substring(self)
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) })
        else {
            return ""
        }
        return text[first...last]
    }
}
