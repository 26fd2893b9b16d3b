// Named symmetric keys read from a key file: the first one is current, the others are still accepted (rotation).

package import Crypto
import Foundation

/// The keys of one key file (`TELETAN_PEPPER_FILE`, `TOTP_KEY_FILE`). Each line is `id=base64:<key>` or
/// `id=hex:<key>`; blank lines and lines starting with `#` are ignored. The first key is the current one: it hashes or
/// seals everything new. Every key is accepted when reading, so a key can be rotated without a gap: add the new one
/// second, then move it first, then drop the old one. The key id is stored next to what a key protects, so it is not
/// secret; it is 1–32 characters of `A–Z a–z 0–9 . _ -`.
package struct KeyRing: Sendable {
    /// One named key.
    package struct Entry: Sendable {
        package let id: String
        package let key: SymmetricKey

        package init(id: String, key: SymmetricKey) {
            self.id = id
            self.key = key
        }
    }

    /// In the file's order; never empty.
    package let entries: [Entry]

    /// A ring of `entries`, the first current. `entries` must not be empty.
    package init(entries: [Entry]) {
        precondition(!entries.isEmpty, "a key ring holds at least one key")
        self.entries = entries
    }

    /// The key new values are hashed or sealed with.
    package var current: Entry { self.entries[0] }

    /// The key named `id`, if the ring has it.
    package func key(id: String) -> SymmetricKey? {
        self.entries.first { $0.id == id }?.key
    }

    /// One random 256-bit key named `id`: a stand-in where a key file could not be loaded (configuration loading then
    /// fails, so the stand-in is never used), and for tests.
    package static func random(id: String = "random") -> KeyRing {
        KeyRing(entries: [Entry(id: id, key: SymmetricKey(size: .bits256))])
    }

    /// Whether `id` is a valid key id (the same pattern the database columns check).
    package static func isValidID(_ id: some StringProtocol) -> Bool {
        (1...32).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
    }

    /// Parses a key file's text. Every key must have `keyBytes` bytes and a unique id, and there must be one key at
    /// least. Errors name the line, never its key.
    package static func parse(_ text: String, keyBytes: ClosedRange<Int>) throws(KeyRingError) -> KeyRing {
        var entries: [Entry] = []
        // `isNewline`: a CRLF file's "\r\n" is one Character, which splitting on "\n" alone would not separate.
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else { throw .malformed(line: number) }
            let id = String(line[..<equals])
            let value = line[line.index(after: equals)...]
            guard Self.isValidID(id) else { throw .invalidID(line: number) }
            guard !entries.contains(where: { $0.id == id }) else { throw .duplicateID(id, line: number) }
            let bytes: [UInt8]?
            if value.hasPrefix("base64:") {
                bytes = Data(base64Encoded: String(value.dropFirst("base64:".count))).map { Array($0) }
            } else if value.hasPrefix("hex:") {
                bytes = Hex.decode(value.dropFirst("hex:".count))
            } else {
                throw .malformed(line: number)
            }
            guard let bytes else { throw .undecodable(line: number) }
            guard keyBytes.contains(bytes.count) else {
                throw .wrongLength(line: number, bytes: bytes.count, allowed: keyBytes)
            }
            entries.append(Entry(id: id, key: SymmetricKey(data: bytes)))
        }
        guard !entries.isEmpty else { throw .empty }
        return KeyRing(entries: entries)
    }
}

/// Why a key file was refused. The descriptions name lines and key ids, never key material.
package enum KeyRingError: Error, Equatable, CustomStringConvertible {
    case empty
    case malformed(line: Int)
    case invalidID(line: Int)
    case duplicateID(String, line: Int)
    case undecodable(line: Int)
    case wrongLength(line: Int, bytes: Int, allowed: ClosedRange<Int>)

    package var description: String {
        switch self {
        case .empty:
            "holds no key (one `id=base64:<key>` per line)"
        case .malformed(let line):
            "line \(line) is not `id=base64:<key>` or `id=hex:<key>`"
        case .invalidID(let line):
            "line \(line): the key id must be 1 to 32 characters of A-Z, a-z, 0-9, '.', '_' and '-'"
        case .duplicateID(let id, let line):
            "line \(line) repeats the key id '\(id)'"
        case .undecodable(let line):
            "line \(line): the key is not valid base64 or hex"
        case .wrongLength(let line, let bytes, let allowed):
            allowed.lowerBound == allowed.upperBound
                ? "line \(line): the key has \(bytes) bytes; it needs exactly \(allowed.lowerBound)"
                : "line \(line): the key has \(bytes) bytes; it needs \(allowed.lowerBound) to \(allowed.upperBound)"
        }
    }
}

extension KeyRing {
    /// `value`'s HMAC-SHA-256 under the current key, lowercase hex: how a short secret is stored.
    package func peppered(_ value: String) -> String {
        Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(value.utf8), using: self.current.key))
    }

    /// `value`'s HMAC-SHA-256 under every key, the current first: what a stored hash may be after a rotation.
    package func pepperedCandidates(_ value: String) -> [String] {
        self.entries.map { Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(value.utf8), using: $0.key)) }
    }
}
