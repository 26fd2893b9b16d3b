// Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP): HMAC-SHA1, 30-second steps, 6 digits.

import Crypto
package import Foundation

/// The portal's second factor (and `cwa officer`'s code). Secrets are 20 random bytes, shown once to the officer as an
/// `otpauth://` URI (base32).
package struct TOTP: Sendable {
    package static let stepSeconds: Int64 = 30
    package static let digits = 6
    /// Codes of the previous and next step are accepted too (clock skew of a phone).
    package static let window: ClosedRange<Int64> = -1...1

    package let secret: [UInt8]

    package init(secret: [UInt8]) {
        self.secret = secret
    }

    /// The TOTP of an `otpauth://totp/…?secret=<base32>…` URI (SHA1, 6 digits, 30 s are the only parameters we make).
    package init?(uri: String) {
        guard uri.hasPrefix("otpauth://totp/"), let components = URLComponents(string: uri),
            let encoded = components.queryItems?.first(where: { $0.name == "secret" })?.value,
            let secret = Base32.decode(encoded), !secret.isEmpty
        else { return nil }
        self.secret = secret
    }

    package static func random() -> TOTP {
        var generator = SystemRandomNumberGenerator()
        return TOTP(secret: (0..<20).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    package static func step(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / Double(self.stepSeconds)).rounded(.down))
    }

    /// The code of `step`, `digits` long with leading zeros (RFC 4226 §5.3's dynamic truncation).
    package func code(step: Int64, digits: Int = TOTP.digits) -> String {
        var counter = UInt64(bitPattern: step).bigEndian
        let message = withUnsafeBytes(of: &counter) { Array($0) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: self.secret)))
        let offset = Int(mac[mac.count - 1] & 0x0F)
        let binary =
            (UInt32(mac[offset]) & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
            | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// The step whose code `code` is, within the window around `date`; `nil` if none matches. Every candidate is
    /// compared in constant time.
    package func matchingStep(_ code: String, at date: Date) -> Int64? {
        let given = Array(code.utf8)
        guard given.count == TOTP.digits, given.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        let now = Self.step(at: date)
        var found: Int64?
        for offset in Self.window {
            if ConstantTime.equals(Array(self.code(step: now + offset).utf8), given) && found == nil {
                found = now + offset
            }
        }
        return found
    }

    /// `otpauth://totp/<issuer>:<user>?secret=…&issuer=…&algorithm=SHA1&digits=6&period=30`, for authenticator apps.
    package func uri(issuer: String, account: String) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let label =
            (issuer + ":" + account).addingPercentEncoding(
                withAllowedCharacters: allowed.union(CharacterSet(charactersIn: ":"))
            ) ?? account
        let encodedIssuer = issuer.addingPercentEncoding(withAllowedCharacters: allowed) ?? issuer
        return
            "otpauth://totp/\(label)?secret=\(Base32.encode(self.secret))&issuer=\(encodedIssuer)&algorithm=SHA1&digits=\(TOTP.digits)&period=\(TOTP.stepSeconds)"
    }
}

/// RFC 4648 base32 without padding, as authenticator apps take secrets.
package enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    package static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(self.alphabet[Int((buffer >> UInt32(bits - 5)) & 0x1F)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(self.alphabet[Int((buffer << UInt32(5 - bits)) & 0x1F)]) }
        return String(decoding: out, as: UTF8.self)
    }

    package static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for character in text.uppercased().utf8 where character != UInt8(ascii: "=") {
            guard let value = self.alphabet.firstIndex(of: character) else { return nil }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return out
    }
}
