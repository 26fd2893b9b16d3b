// CTA tokens of the NHS test path: 8 characters of Crockford's base 32, the last a Damm check character (nhs §3.1).

import Foundation

/// A CTA token (`ctaToken`): seven random characters of the alphabet `0123456789abcdefghjkmnpqrstvwxyz` (each one's
/// value is its index: no i, l, o or u) and a check character that makes the Damm checksum of the whole token 0.
/// A lab reports a result against it, and a person types one that came with a test taken outside the app.
package struct CTAToken: Sendable, Hashable, CustomStringConvertible {
    package let value: String

    package static let alphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
    package static let length = 8

    /// `text` when it is a CTA token exactly as issued: 8 lower-case characters of the alphabet whose checksum is 0.
    ///
    /// The reference's `validate` accepts any 1 to 10 characters whose checksum is 0 (a lone `0` passes, nhs §13.1);
    /// every token it issues has 8, so that is what is accepted here.
    package init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == Self.length, let digits = Self.digits(bytes), Self.checksum(digits) == 0 else {
            return nil
        }
        self.value = text
    }

    /// What a person typed, read as Crockford intended: case does not matter, `o` is `0`, `i` and `l` are `1`,
    /// spaces and hyphens are ignored. The reference server compares case-sensitively, so a token read aloud and
    /// typed in capitals fails there; its design note normalises like this (nhs §3.1).
    package init?(typed text: String) {
        var normalised = ""
        for character in text.lowercased() {
            switch character {
            case " ", "-": continue
            case "o": normalised.append("0")
            case "i", "l": normalised.append("1")
            default: normalised.append(character)
            }
        }
        self.init(normalised)
    }

    package var description: String { self.value }

    /// A new random token, drawn again while it contains a banned word (nhs §3.1, `generate`).
    package static func random(using generator: inout some RandomNumberGenerator) -> CTAToken {
        while true {
            // 35 random bits: seven characters of 5 bits each.
            let bits = UInt64.random(in: 0..<(1 << 35), using: &generator)
            var digits = (0..<7).map { index in UInt8((bits >> UInt64(5 * (6 - index))) & 31) }
            digits.append(Self.checksum(digits))
            let token = String(decoding: digits.map { Self.alphabet[Int($0)] }, as: UTF8.self)
            if !BannedWords.shared.matches(token) { return CTAToken(unchecked: token) }
        }
    }

    package static func random() -> CTAToken {
        var generator = SystemRandomNumberGenerator()
        return self.random(using: &generator)
    }

    private init(unchecked value: String) {
        self.value = value
    }

    /// The values of `bytes`, or nil when one is not in the alphabet (case-sensitive, as the reference).
    static func digits(_ bytes: [UInt8]) -> [UInt8]? {
        var digits: [UInt8] = []
        digits.reserveCapacity(bytes.count)
        for byte in bytes {
            guard let index = Self.alphabet.firstIndex(of: byte) else { return nil }
            digits.append(UInt8(index))
        }
        return digits
    }

    /// The Damm checksum over GF(2^5) of the reference: `c ^= d; c <<= 1; if c >= 32 { c = (c ^ 5) % 32 }`. Appending
    /// a sequence's checksum makes the checksum of the whole 0.
    package static func checksum(_ digits: [UInt8]) -> UInt8 {
        digits.reduce(0) { check, digit in
            var c = UInt16(check ^ digit) << 1
            if c >= 32 { c = (c ^ 5) % 32 }
            return UInt8(c)
        }
    }

    /// Whether `token` contains a banned word once digits that look like letters read as those letters
    /// (4→a, 8→b, 3→e, 9→g, 5→s), as the reference's generator discards such tokens.
    package static func isBanned(_ token: String) -> Bool {
        BannedWords.shared.matches(token)
    }
}

/// The words no generated token may contain (`Resources/cta-banned-words.txt`): plain lower-case words, one a line,
/// matched as substrings (the reference reads them as regular expressions; none of them uses any other syntax, and
/// loading refuses a line that would).
final class BannedWords: Sendable {
    static let shared = BannedWords()
    let words: [String]

    private init() {
        guard let url = Bundle.module.url(forResource: "cta-banned-words", withExtension: "txt"),
            let text = try? String(contentsOf: url, encoding: .utf8)
        else { fatalError("ENCrypto's resource cta-banned-words.txt is missing") }
        let words = text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }
        precondition(
            words.allSatisfy { $0.utf8.allSatisfy { (0x61...0x7a).contains($0) || (0x30...0x39).contains($0) } },
            "cta-banned-words.txt holds a line that is not a plain word"
        )
        self.words = words
    }

    func matches(_ token: String) -> Bool {
        let read = String(
            token.map { character -> Character in
                switch character {
                case "4": "a"
                case "8": "b"
                case "3": "e"
                case "9": "g"
                case "5": "s"
                default: character
                }
            }
        )
        return self.words.contains { read.contains($0) }
    }
}
