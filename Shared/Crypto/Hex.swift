// Lowercase hexadecimal encoding and strict decoding of byte sequences.

/// Hexadecimal helpers; every hash this system stores or compares is lowercase hex.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of the given bytes.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(self.digits[Int(byte >> 4)])
            out.append(self.digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of an even-length hex string (either case), or `nil` if it is not one.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = self.value(of: utf8[index]), let low = self.value(of: utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// Whether every character is a hex digit (either case) and there are exactly `count` of them.
    package static func isHex(_ text: some StringProtocol, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { self.value(of: $0) != nil }
    }

    /// Whether `text` is a SHA-256 in hex (64 digits, either case); with `xPrefix`, the first character may also be
    /// `x` or `X`, the form of a date-of-birth hash (`^[XxA-Fa-f0-9][A-Fa-f0-9]{63}$`, cwa-satellites §1.2).
    package static func isSHA256(_ text: some StringProtocol, xPrefix: Bool = false) -> Bool {
        guard let first = text.utf8.first else { return false }
        let xFirst = xPrefix && (first == UInt8(ascii: "x") || first == UInt8(ascii: "X"))
        return text.utf8.count == 64 && (xFirst || self.value(of: first) != nil)
            && self.isHex(text.dropFirst(), count: 63)
    }

    private static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
