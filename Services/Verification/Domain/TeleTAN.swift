// teleTANs: ten characters of a 31-symbol alphabet, the last one a check character (cwa-satellites §1.3).

import ENCrypto

/// What a teleTAN is for; it travels in `X-CWA-TELETAN-TYPE` and decides its lifetime.
enum TeleTANType: String, Sendable, CaseIterable {
    /// A positive test reported over the hotline: valid for one hour by default.
    case test = "TEST"
    /// An event (cluster) warning by a health authority: valid for two days by default.
    case event = "EVENT"
}

/// A syntactically valid teleTAN: nine random symbols plus the check character.
struct TeleTAN: Sendable, Equatable {
    /// `23456789ABCDEFGHJKMNPQRSTUVWXYZ`: no 0, 1, I, L or O, which are easily confused.
    static let alphabet: [UInt8] = Array("23456789ABCDEFGHJKMNPQRSTUVWXYZ".utf8)
    static let bodyLength = 9
    static let length = bodyLength + 1

    let value: String

    /// A new teleTAN whose body comes from `generator` (the system CSPRNG in production).
    static func generate(using generator: inout some RandomNumberGenerator) -> TeleTAN {
        var bytes = (0..<Self.bodyLength).map { _ in Self.alphabet.randomElement(using: &generator)! }
        bytes.append(Self.checkCharacter(body: bytes))
        return TeleTAN(value: String(decoding: bytes, as: UTF8.self))
    }

    /// Accepts `text` only if it has the length, uses only the alphabet and ends with the right check character;
    /// all of that is decided before any database work.
    init?(validating text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == Self.length, bytes.allSatisfy({ Self.alphabet.contains($0) }) else { return nil }
        guard bytes[Self.bodyLength] == Self.checkCharacter(body: bytes[..<Self.bodyLength]) else { return nil }
        self.value = text
    }

    private init(value: String) {
        self.value = value
    }

    /// The first hex digit of SHA-256(body) in upper case, with `0` → `G` and `1` → `H` so it stays in the
    /// alphabet (the reference's `HashingService#getCheckDigit`).
    static func checkCharacter(body: some Collection<UInt8>) -> UInt8 {
        let first = SecretHash.sha256Hex(bytes: body).utf8.first!
        switch first {
        case UInt8(ascii: "0"): return UInt8(ascii: "G")
        case UInt8(ascii: "1"): return UInt8(ascii: "H")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return first - 32
        default: return first
        }
    }
}
