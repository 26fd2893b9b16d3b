// Registration tokens and TANs: random UUIDs in the format of cwa-satellites §1.3.

import ENCrypto

/// Random UUIDs of version 4 in lowercase text: the form of registration tokens and TANs (§1.3).
enum RandomUUID {
    /// 122 random bits from `generator` with the version (4) and variant (10xx) bits set.
    static func generate(using generator: inout some RandomNumberGenerator) -> String {
        var bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = Hex.encode(bytes)
        // 8-4-4-4-12 hex digits.
        var text = ""
        var rest = Substring(hex)
        for length in [8, 4, 4, 4, 12] {
            if !text.isEmpty { text += "-" }
            text += rest.prefix(length)
            rest = rest.dropFirst(length)
        }
        return text
    }

    /// From the system's CSPRNG (`getrandom` on Linux).
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return self.generate(using: &generator)
    }

    /// Whether `text` matches `^[a-f0-9]{8}-[a-f0-9]{4}-4[a-f0-9]{3}-[89aAbB][a-f0-9]{3}-[a-f0-9]{12}$`, the
    /// reference's pattern for tokens and TANs (§1.2; its variant character also admits upper-case A and B).
    static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            switch index {
            case 8, 13, 18, 23:
                guard byte == UInt8(ascii: "-") else { return false }
            case 14:
                guard byte == UInt8(ascii: "4") else { return false }
            case 19:
                guard "89abAB".utf8.contains(byte) else { return false }
            default:
                guard Self.isLowerHex(byte) else { return false }
            }
        }
        return true
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
