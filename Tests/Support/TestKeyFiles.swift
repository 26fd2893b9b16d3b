// Key files (TELETAN_PEPPER_FILE, TOTP_KEY_FILE) for tests: fixed keys, written once under the temporary folder.

package import ENCrypto
import Foundation

/// Key files in `KeyRing`'s format. A key is the SHA-256 of its seed, so a file's content follows from its ids and
/// seeds; files are named by a hash of their content, so test processes share them and none accumulates.
package enum TestKeyFiles {
    /// One key, `test-1`: what the test settings give verification- and portal-service.
    package static let standardKeys = [(id: "test-1", seed: "test-1")]

    /// The path of the standard key file (`/nonexistent` if it could not be written, which the service reports).
    package static var standard: String {
        (try? self.path(self.standardKeys)) ?? "/nonexistent/test-keys"
    }

    /// The file's text: `id=base64:<key>` per entry, the first current.
    package static func text(_ keys: [(id: String, seed: String)]) -> String {
        keys.map { "\($0.id)=base64:\(Data(self.key(seed: $0.seed)).base64EncodedString())\n" }.joined()
    }

    /// The 32 key bytes of `seed`.
    package static func key(seed: String) -> [UInt8] {
        Hex.decode(SecretHash.sha256Hex(seed))!
    }

    /// The keys as a ring, as the service parses the file.
    package static func ring(_ keys: [(id: String, seed: String)]) throws -> KeyRing {
        try KeyRing.parse(self.text(keys), keyBytes: 32...32)
    }

    /// Writes the key file of `keys` (if it is not there yet) and returns its path.
    package static func path(_ keys: [(id: String, seed: String)]) throws -> String {
        try self.write(self.text(keys))
    }

    /// Writes `text` as a key file (if it is not there yet) and returns its path; the name is a hash of the content.
    package static func write(_ text: String, suffix: String = ".keys") throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("en-test-keys")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(String(SecretHash.sha256Hex(text).prefix(24)) + suffix)
        if (try? String(contentsOf: file, encoding: .utf8)) != text {
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        return file.path
    }
}
