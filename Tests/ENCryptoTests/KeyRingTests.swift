// Key files (TELETAN_PEPPER_FILE, TOTP_KEY_FILE): the format, the order, and a clear error for every bad file.

import Crypto
import ENCrypto
import Foundation
import Testing

@Suite("Key files")
struct KeyRingTests {
    /// 32 bytes of `byte` in base64.
    static func base64(_ byte: UInt8, count: Int = 32) -> String {
        Data(repeating: byte, count: count).base64EncodedString()
    }

    /// The raw bytes of a key.
    static func bytes(_ key: SymmetricKey) -> [UInt8] {
        key.withUnsafeBytes { Array($0) }
    }

    @Test("one key per line, base64 or hex; comments and blank lines are skipped; the first key is current")
    func parses() throws {
        let text = """
            # rotated 2026-11
            new=base64:\(Self.base64(2))

            old=hex:\(String(repeating: "01", count: 32))\r
              spare.key_3-x=base64:\(Self.base64(3, count: 64))
            """

        let ring = try KeyRing.parse(text, keyBytes: 32...64)

        #expect(ring.entries.map(\.id) == ["new", "old", "spare.key_3-x"])
        #expect(ring.current.id == "new")
        #expect(Self.bytes(ring.current.key) == Array(repeating: 2, count: 32))
        #expect(try Self.bytes(#require(ring.key(id: "old"))) == Array(repeating: 1, count: 32))
        #expect(try Self.bytes(#require(ring.key(id: "spare.key_3-x"))).count == 64)
        #expect(ring.key(id: "missing") == nil)
    }

    @Test(
        "a bad file is refused with the line and the reason",
        arguments: [
            ("", KeyRingError.empty),
            ("# only a comment\n\n", .empty),
            ("a hex:\(String(repeating: "01", count: 32))", .malformed(line: 1)),
            ("a=\(KeyRingTests.base64(1))", .malformed(line: 1)),
            ("a=base64:\(KeyRingTests.base64(1))\n=base64:\(KeyRingTests.base64(2))", .invalidID(line: 2)),
            ("a/b=base64:\(KeyRingTests.base64(1))", .invalidID(line: 1)),
            ("\(String(repeating: "k", count: 33))=base64:\(KeyRingTests.base64(1))", .invalidID(line: 1)),
            (
                "a=base64:\(KeyRingTests.base64(1))\n# c\na=base64:\(KeyRingTests.base64(2))",
                .duplicateID("a", line: 3)
            ),
            ("a=base64:not base64!", .undecodable(line: 1)),
            ("a=hex:0g", .undecodable(line: 1)),
            ("a=base64:\(KeyRingTests.base64(1, count: 16))", .wrongLength(line: 1, bytes: 16, allowed: 32...32)),
            ("a=base64:\(KeyRingTests.base64(1, count: 33))", .wrongLength(line: 1, bytes: 33, allowed: 32...32)),
        ]
    )
    func refused(text: String, expected: KeyRingError) {
        #expect(throws: expected) { try KeyRing.parse(text, keyBytes: 32...32) }
    }

    @Test("the reasons name lines, lengths and ids, never key material")
    func descriptionsWithoutKeys() {
        let short = Self.base64(7, count: 16)
        var reasons: [String] = []
        for text in ["a=base64:\(short)", "a=base64:\(short)x", "b=base64:\(Self.base64(7))\nb=base64:\(short)"] {
            do {
                _ = try KeyRing.parse(text, keyBytes: 32...32)
            } catch {
                reasons.append(error.description)
            }
        }

        #expect(
            reasons == [
                "line 1: the key has 16 bytes; it needs exactly 32",
                "line 1: the key is not valid base64 or hex",
                "line 2 repeats the key id 'b'",
            ]
        )
        #expect(!reasons.joined().contains(short))
    }
}
