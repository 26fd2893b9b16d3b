// Formats of cwa-satellites §1.2–1.3: UUIDv4 tokens and TANs, hashed GUIDs, DOB hashes, teleTANs.

import ENCrypto
import ENTestSupport
import Foundation
import HTTPTypes
import Testing

@testable import VerificationService

@Suite("Identifier formats")
struct FormatTests {
    @Test("generated UUIDs are version 4, variant 10, lower case, and pass the reference's pattern")
    func uuids() {
        var generator = SeededGenerator(seed: 1)
        for _ in 0..<500 {
            let uuid = RandomUUID.generate(using: &generator)
            let characters = Array(uuid)
            #expect(RandomUUID.isValid(uuid))
            #expect(characters[14] == "4")
            #expect("89ab".contains(characters[19]))
            #expect(uuid == uuid.lowercased())
            #expect(UUID(uuidString: uuid) != nil)
        }
        #expect(RandomUUID.generate() != RandomUUID.generate())
    }

    @Test(
        "the UUID pattern refuses everything else",
        arguments: [
            "", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "F47AC10B-58CC-4372-A567-0E02B2C3D479",
            "f47ac10b-58cc-4372-c567-0e02b2c3d479",
            "f47ac10b58cc4372a5670e02b2c3d479", "f47ac10b-58cc-4372-a567-0e02b2c3d47",
            "f47ac10b-58cc-4372-a567-0e02b2c3d4790",
            "g47ac10b-58cc-4372-a567-0e02b2c3d479", "f47ac10b-58cc-4372-a567_0e02b2c3d479",
        ]
    )
    func invalidUUIDs(text: String) {
        #expect(!RandomUUID.isValid(text))
    }

    @Test("the pattern admits the reference's upper-case variant character")
    func variantCase() {
        #expect(RandomUUID.isValid("f47ac10b-58cc-4372-A567-0e02b2c3d479"))
        #expect(RandomUUID.isValid("f47ac10b-58cc-4372-b567-0e02b2c3d479"))
    }

    @Test("hashed GUIDs and DOB hashes are validated and folded to lower case")
    func hashes() {
        let hex = SecretHash.sha256Hex("x")
        #expect(HashedGUID(hex.uppercased())?.value == hex)
        #expect(HashedGUID("x" + hex.dropFirst()) == nil)
        #expect(HashedGUID(String(hex.dropLast())) == nil)
        #expect(DOBHash("X" + hex.dropFirst().uppercased())?.value == "x" + hex.dropFirst())
        #expect(DOBHash(hex)?.value == hex)
        #expect(DOBHash("y" + hex.dropFirst()) == nil)
        #expect(DOBHash("x" + hex) == nil)
    }

    @Test("teleTANs: ten characters of the 31-symbol alphabet, the last the check character of the first nine")
    func teleTANFormat() {
        var generator = SeededGenerator(seed: 2)
        for _ in 0..<500 {
            let teleTAN = TeleTAN.generate(using: &generator).value
            #expect(teleTAN.count == 10)
            #expect(teleTAN.utf8.allSatisfy { TeleTAN.alphabet.contains($0) })
            #expect(TeleTAN(validating: teleTAN) != nil)
        }
        #expect(TeleTAN.alphabet.count == 31)
        #expect(!TeleTAN.alphabet.contains { "01ILO".utf8.contains($0) })
    }

    @Test("the check character is the first hex digit of SHA-256(body) in upper case, 0 → G and 1 → H")
    func checkCharacter() {
        var generator = SeededGenerator(seed: 3)
        var seen: Set<Character> = []
        for _ in 0..<2000 {
            let teleTAN = TeleTAN.generate(using: &generator).value
            let body = teleTAN.prefix(9)
            let digit = SecretHash.sha256Hex(body).first!
            let expected: Character = digit == "0" ? "G" : digit == "1" ? "H" : Character(digit.uppercased())
            #expect(teleTAN.last == expected)
            seen.insert(teleTAN.last!)
        }
        #expect(seen == Set("GH23456789ABCDEF"))
    }

    @Test(
        "a changed character is caught by the check character in at least 90 % of cases; bad length or symbols always"
    )
    func singleCharacterChanges() {
        var generator = SeededGenerator(seed: 4)
        var changes = 0
        var caught = 0
        for _ in 0..<50 {
            let teleTAN = Array(TeleTAN.generate(using: &generator).value.utf8)
            for position in 0..<10 {
                for symbol in TeleTAN.alphabet where symbol != teleTAN[position] {
                    var changed = teleTAN
                    changed[position] = symbol
                    changes += 1
                    if TeleTAN(validating: String(decoding: changed, as: UTF8.self)) == nil { caught += 1 }
                }
            }
            let text = String(decoding: teleTAN, as: UTF8.self)
            #expect(TeleTAN(validating: String(text.dropLast())) == nil)
            #expect(TeleTAN(validating: text + "A") == nil)
            #expect(TeleTAN(validating: text.lowercased()) == nil || text == text.lowercased())
            #expect(TeleTAN(validating: "0" + text.dropFirst()) == nil)
        }
        // A check character drawn from 16 values misses about one change in 16 of the body (and none of itself).
        #expect(Double(caught) / Double(changes) > 0.9)
    }

    @Test("the cwa-fake header: 1 is fake, any other value real with padding, absent real without")
    func fakeMode() {
        #expect(FakeMode([FakeMode.headerName: "1"]) == .fake)
        #expect(FakeMode([FakeMode.headerName: "0"]) == .real)
        #expect(FakeMode([:]) == .realWithoutHeader)
        #expect(FakeMode.realWithoutHeader.pads(.testResult))
        #expect(!FakeMode.realWithoutHeader.pads(.tan))
        #expect(FakeMode.real.pads(.registrationToken))
    }

    @Test("each endpoint has its own delay estimate, moving towards its own real durations")
    func delayEstimates() {
        let estimator = FakeDelayEstimator(initial: .milliseconds(10), samples: 5)
        for _ in 0..<50 { estimator.record(.tan, duration: .milliseconds(500)) }
        estimator.record(.testResult, duration: .milliseconds(60))

        #expect(abs(estimator.average(.tan) / .milliseconds(1) - 500) < 1)
        #expect(abs(estimator.average(.testResult) / .milliseconds(1) - 20) < 0.001)
        #expect(abs(estimator.average(.registrationToken) / .milliseconds(1) - 10) < 0.001)
    }

    @Test("the result poll's padded size fits the longest possible body")
    func paddedSize() throws {
        // Not the body the size is computed from: quotes escape to two bytes, a non-BMP character is four.
        let long = TestResultResponse(
            testResult: 9,
            sc: .max,
            labId: String(repeating: "\"", count: 32) + String(repeating: "🦠", count: 32)
        )
        let shortest = TestResultResponse(testResult: 0, sc: 0, labId: nil, responsePadding: nil)

        #expect(try PaddedJSON.padded(long).count == PaddedJSON.testResultSize)
        #expect(try PaddedJSON.padded(shortest).count == PaddedJSON.testResultSize)
    }
}
