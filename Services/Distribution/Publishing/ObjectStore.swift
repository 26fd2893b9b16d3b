// Where the CDN tree goes: a local directory served by the gateway, or an S3-compatible bucket.

import Foundation

/// One object of the CDN tree, ready to publish.
struct CDNObject: Sendable, Equatable {
    /// The object key, relative to the bucket root (`version/v1/diagnosis-keys/country/DE/date`).
    let key: String
    let body: [UInt8]
    let contentType: ContentType
    /// On disk the object is `<key>/index`, because the key is also a folder (cwa-server §3.5).
    let isDirectoryIndex: Bool
    /// `cwa-hash` (cwa-server §3.8): lowercase hex of MD5(MD5(content)), where content is `export.bin` for an archive
    /// (its signature changes at every signing) and the whole body otherwise.
    let checksum: String
    /// The NHS file signature (nhs §2) an object is served with: S3 user metadata `signature` and
    /// `signature-date`; the directory store keeps it in the file (`DirectoryStore`).
    var signature: Signature? = nil

    /// `X-Amz-Meta-Signature` and `X-Amz-Meta-Signature-Date` of a signed object.
    struct Signature: Sendable, Equatable {
        /// `keyId="<id>",signature="<Base64 DER>"`.
        let value: String
        /// `EEE, dd MMM yyyy HH:mm:ss UTC`.
        let date: String

        /// The id in `keyId="<id>"`.
        var keyID: String {
            guard let start = self.value.range(of: #"keyId=""#) else { return "" }
            return String(self.value[start.upperBound...].prefix { $0 != "\"" })
        }
    }

    /// The `cwa-hash` of a signed object: of its bytes and its signing key's id, so a new key republishes it.
    static func signedChecksum(_ body: [UInt8], keyID: String) -> String {
        CWAHash.of(body + Array("\u{0}\(keyID)".utf8))
    }

    enum ContentType: String, Sendable {
        case json = "application/json"
        case zip = "application/zip"
    }

    /// Key files (every key ending in a digit: day and hour archives, trace-warning hours) are never rewritten once
    /// published (cwa-server §3.8).
    var isKeyFile: Bool { CDNObject.isKeyFile(self.key) }

    static func isKeyFile(_ key: String) -> Bool {
        key.utf8.last.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? false
    }
}

/// The operations publishing needs, one object at a time; the publisher adds parallelism, retries and the
/// decisions of what to upload.
protocol ObjectStore: Sendable {
    /// A name for logs (`directory /srv/cdn`, `s3 http://…/cwa`).
    var description: String { get }
    /// Every object key under `prefix` (`""` for all). Keys are logical: a directory index is listed as its folder.
    func list(prefix: String) async throws -> Set<String>
    /// The `cwa-hash` an object was published with, or `nil` if it is absent or carries none.
    func checksum(of key: String) async throws -> String?
    /// The object's body as phones get it, or `nil` if it is absent (the audit reads the tree back).
    func get(_ key: String) async throws -> [UInt8]?
    /// Stores the object so that readers see either the old or the whole new content, never a part.
    func put(_ object: CDNObject) async throws
    /// Removes an object; removing an absent one is not an error.
    func delete(_ key: String) async throws
    /// Removes what a run that died left half-written (never served, but never cleaned up otherwise); returns how
    /// many. Called by a run holding the publication lock, so no other run is writing.
    func removeAbandoned() async throws -> Int
}

extension ObjectStore {
    /// A store whose writes are atomic leaves nothing behind.
    func removeAbandoned() async throws -> Int { 0 }
}
