// Hex, secret hashing, constant-time comparison and certificate thumbprints.

import ENCrypto
import Testing

@Suite("ENCrypto")
struct ENCryptoTests {
    @Test("SHA-256 hex of a secret matches the known answer and is lowercase")
    func sha256KnownAnswer() {
        #expect(SecretHash.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SecretHash.sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("a secret with a control character is not clean; printable text, spaces and non-ASCII letters are")
    func secretText() {
        for dirty in ["secret\0anything", "\0", "tab\there", "line\n", "del\u{7F}", "c1\u{85}", "esc\u{1B}[0m"] {
            #expect(!SecretText.isClean(dirty), "\(dirty.debugDescription)")
        }
        for clean in ["", "correct horse battery staple", "Passwort-mit-Ümlaut", "a/b+c=d_e-f", "日本語のパスワード"] {
            #expect(SecretText.isClean(clean), "\(clean.debugDescription)")
        }
    }

    @Test("hex encodes lowercase and decodes either case; malformed input is refused")
    func hex() {
        #expect(Hex.encode([0x00, 0xAB, 0xff]) == "00abff")
        #expect(Hex.decode("00ABff") == [0x00, 0xAB, 0xFF])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.isHex("aB09", count: 4))
        #expect(!Hex.isHex("aB09", count: 5))
        #expect(!Hex.isHex("aBg9", count: 4))
    }

    @Test("constant-time equality compares whole values, including their lengths")
    func constantTime() {
        #expect(ConstantTime.equals("token-1", "token-1"))
        #expect(!ConstantTime.equals("token-1", "token-2"))
        #expect(!ConstantTime.equals("token", "token-1"))
        #expect(!ConstantTime.equals("", "a"))
        #expect(ConstantTime.equals("", ""))
        // Lengths that differ by a multiple of 256, the longer one padded with zero bytes, are still unequal.
        #expect(!ConstantTime.equals([UInt8](), [UInt8](repeating: 0, count: 256)))
        #expect(!ConstantTime.equals([UInt8(7)], [7] + [UInt8](repeating: 0, count: 256)))
        #expect(ConstantTime.contains(["a", "b", "c"], "c"))
        #expect(!ConstantTime.contains(["a", "b"], "c"))
    }

    @Test("thumbprints parse in hex or colon form and are normalised to lowercase")
    func thumbprints() {
        let hex = String(repeating: "Ab", count: 32)
        let colons = (0..<32).map { _ in "AB" }.joined(separator: ":")

        #expect(CertificateThumbprint(parsing: hex)?.hex == String(repeating: "ab", count: 32))
        #expect(CertificateThumbprint(parsing: " \(colons)\n")?.hex == String(repeating: "ab", count: 32))
        #expect(CertificateThumbprint(parsing: String(hex.dropLast())) == nil)
        #expect(CertificateThumbprint(parsing: hex + "0") == nil)
        #expect(CertificateThumbprint(derEncodedCertificate: [1, 2, 3]).hex == SecretHash.sha256Hex(bytes: [1, 2, 3]))
    }
}
