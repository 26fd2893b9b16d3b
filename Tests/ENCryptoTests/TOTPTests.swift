// TOTP against RFC 6238's SHA-1 test vectors, the otpauth:// URI both ways, and base32.

import ENCrypto
import Foundation
import Testing

@Suite("TOTP")
struct TOTPTests {
    static let rfcSecret = Array("12345678901234567890".utf8)

    @Test(
        "RFC 6238 appendix B, SHA-1: the 8-digit codes at the six reference times",
        arguments: [
            (59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"),
            (1_234_567_890, "89005924"), (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
        ]
    )
    func rfcVectors(time: Int64, code: String) {
        let totp = TOTP(secret: Self.rfcSecret)
        #expect(totp.code(step: TOTP.step(at: Date(timeIntervalSince1970: TimeInterval(time))), digits: 8) == code)
    }

    @Test("a code matches its own step and the neighbours, not two steps away")
    func window() {
        let totp = TOTP(secret: Self.rfcSecret)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let step = TOTP.step(at: now)

        #expect(totp.matchingStep(totp.code(step: step), at: now) == step)
        #expect(totp.matchingStep(totp.code(step: step + 1), at: now) == step + 1)
        #expect(totp.matchingStep(totp.code(step: step - 1), at: now) == step - 1)
        #expect(totp.matchingStep(totp.code(step: step + 2), at: now) == nil)
        #expect(totp.matchingStep("12345", at: now) == nil)
    }

    @Test("the otpauth:// URI carries the secret in base32 and parses back; other URIs do not parse")
    func uri() throws {
        let totp = TOTP.random()

        let uri = totp.uri(issuer: "CWA Portal", account: "anna")
        let parsed = try #require(TOTP(uri: uri))

        #expect(uri.hasPrefix("otpauth://totp/CWA%20Portal:anna?secret="))
        #expect(parsed.secret == totp.secret)
        #expect(TOTP(uri: "otpauth://hotp/x?secret=GEZDGNBV") == nil)
        #expect(TOTP(uri: "otpauth://totp/x?issuer=y") == nil)
        #expect(TOTP(uri: "otpauth://totp/x?secret=not-base32!") == nil)
        #expect(Base32.decode(Base32.encode(Self.rfcSecret)) == Self.rfcSecret)
        #expect(Base32.encode(Array("foobar".utf8)) == "MZXW6YTBOI")
    }
}
