// CTA tokens (nhs §3.1): the reference's vectors, the contract examples that fail the checksum, generation.

import ENCrypto
import ENNHS
import ENTestSupport
import Testing

@Suite("CTA tokens")
struct CTATokenTests {
    @Test("the reference's valid tokens pass; the check character of cc8f0b6 is z")
    func validVectors() {
        #expect(CTAToken("cc8f0b6z")?.value == "cc8f0b6z")
        #expect(CTAToken("tbdfjaj0") != nil)
        let digits = "cc8f0b6".utf8.map { UInt8(CTAToken.alphabet.firstIndex(of: $0)!) }
        #expect(CTAToken.alphabet[Int(CTAToken.checksum(digits))] == UInt8(ascii: "z"))
    }

    @Test(
        "the contract's examples that fail the Damm check, and malformed tokens, are refused",
        arguments: [
            "t1qjee7p", "9bknrr20", "1234abcd", "invalid-token", "invalid-cta-token", "cc8f0b6y", "CC8F0B6Z", "cc8f0b6",
            "cc8f0b6zz", "", "0", "cc8f0b6u", "cc8fob6z",
        ]
    )
    func invalid(_ text: String) {
        #expect(CTAToken(text) == nil)
    }

    @Test("a lone 0 has checksum 0 (the reference accepts it); only 8 characters are tokens here")
    func lengthIsEnforced() {
        #expect(CTAToken.checksum([0]) == 0)
        #expect(CTAToken("0") == nil)
    }

    @Test("typed tokens: case, o for 0, i and l for 1, spaces and hyphens are forgiven; the checksum is not")
    func typed() {
        #expect(CTAToken(typed: "CC8F-0B6Z")?.value == "cc8f0b6z")
        #expect(CTAToken(typed: "cc8f ob6z")?.value == "cc8f0b6z")
        #expect(CTAToken(typed: "TBDF-JAJO")?.value == "tbdfjaj0")
        #expect(CTAToken(typed: "CC8F-0B6Y") == nil)
        #expect(CTAToken(typed: "cc8f0b6u") == nil, "u is not in the alphabet")
    }

    @Test("every single-character error and every adjacent transposition is detected")
    func dammDetects() throws {
        let token = try #require(CTAToken("cc8f0b6z"))
        var digits = Array(token.value.utf8).map { UInt8(CTAToken.alphabet.firstIndex(of: $0)!) }
        for position in digits.indices {
            let original = digits[position]
            for replacement in UInt8(0)..<32 where replacement != original {
                digits[position] = replacement
                #expect(CTAToken.checksum(digits) != 0, "position \(position) -> \(replacement)")
            }
            digits[position] = original
        }
        for position in 0..<(digits.count - 1) where digits[position] != digits[position + 1] {
            digits.swapAt(position, position + 1)
            #expect(CTAToken.checksum(digits) != 0, "swap at \(position)")
            digits.swapAt(position, position + 1)
        }
    }

    @Test("banned words are found, also behind digits that read as letters (4a 8b 3e 9g 5s)")
    func bannedWords() {
        #expect(CTAToken.isBanned("x0mfgxxx"))
        #expect(CTAToken.isBanned("xx0r41xx"), "0ra1 with 4 for a")
        #expect(!CTAToken.isBanned("cc8f0b6z"))
    }

    @Test("generated tokens: 8 characters, valid, never banned, and different")
    func generated() {
        var generator = SeededGenerator(seed: 20_261_126)
        var seen = Set<String>()
        for _ in 0..<2000 {
            let token = CTAToken.random(using: &generator)
            #expect(token.value.utf8.count == 8)
            #expect(CTAToken(token.value) == token)
            #expect(!CTAToken.isBanned(token.value))
            seen.insert(token.value)
        }
        #expect(seen.count == 2000)
    }
}
