// Registration tokens, TANs, hashed GUIDs and DOB hashes: the formats of cwa-satellites §1.2–1.3.

/// Random UUIDs of version 4 in lowercase text: the form of registration tokens and TANs (§1.3).
enum RandomUUID {
    /// 122 random bits from `generator` with the version (4) and variant (10xx) bits set.
    static func generate(using generator: inout some RandomNumberGenerator) -> String {
        var bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
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

    static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}

/// The SHA-256 hex of a test's GUID, as the app sends it (`^[0-9A-Fa-f]{64}$`), kept in lowercase so that one
/// GUID has one form for the one-token rule and for test-result-service.
struct HashedGUID: Hashable, Sendable {
    let value: String

    init?(_ text: String) {
        guard text.utf8.count == 64, text.utf8.allSatisfy(\.isASCIIHexDigit) else { return nil }
        self.value = text.lowercased()
    }
}

/// The date-of-birth hash (`^[XxA-Fa-f0-9][A-Fa-f0-9]{63}$`, §1.2–1.3): SHA-256 hex of GUID and birth date with
/// its first character replaced by `x`; kept in lowercase.
struct DOBHash: Hashable, Sendable {
    let value: String

    init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 64, let first = bytes.first else { return nil }
        guard first == UInt8(ascii: "x") || first == UInt8(ascii: "X") || first.isASCIIHexDigit else { return nil }
        guard bytes.dropFirst().allSatisfy(\.isASCIIHexDigit) else { return nil }
        self.value = text.lowercased()
    }
}

extension UInt8 {
    var isASCIIHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
