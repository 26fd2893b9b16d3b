// Making the three kinds of CDN objects: JSON indexes, signed archives and the empty trace-warning hour.

import Crypto
import ENCrypto
import Foundation

extension CDNObject {
    /// A JSON index; most indexes are also folders (`…/country` is listed and has children), so they are stored as
    /// `<key>/index` in a directory.
    static func index(_ key: String, json: String, isDirectoryIndex: Bool = true) -> CDNObject {
        let body = Array(json.utf8)
        return CDNObject(
            key: key,
            body: body,
            contentType: .json,
            isDirectoryIndex: isDirectoryIndex,
            checksum: CWAHash.of(body)
        )
    }

    /// A signed archive of `content`; its checksum is the content's, since every signing gives other signature bytes.
    static func archive(
        _ key: String,
        content: [UInt8],
        signer: ArchiveSigner,
        isDirectoryIndex: Bool = false
    ) throws -> CDNObject {
        CDNObject(
            key: key,
            body: try signer.archive(content: content),
            contentType: .zip,
            isDirectoryIndex: isDirectoryIndex,
            checksum: CWAHash.of(content)
        )
    }

    /// The 0-byte file of a trace-warning hour without data (cwa-server §3.5).
    static func emptyFile(_ key: String) -> CDNObject {
        CDNObject(key: key, body: [], contentType: .zip, isDirectoryIndex: false, checksum: CWAHash.of([]))
    }
}

/// `cwa-hash` (cwa-server §3.8): lowercase hex of MD5 over the 16 raw bytes of MD5(content). MD5 only detects
/// change here; nothing relies on it for integrity (the signature does that).
enum CWAHash {
    static func of(_ content: [UInt8]) -> String {
        Hex.encode(Insecure.MD5.hash(data: Array(Insecure.MD5.hash(data: content))))
    }
}

/// The JSON of the index files: arrays without spaces, as the reference's json-simple writes them.
enum IndexJSON {
    static func strings(_ values: [String]) -> String { self.encode(values) }

    static func numbers(_ values: [Int64]) -> String { self.encode(values) }

    /// The trace-warning hour index, `{"oldest":N,"latest":M}`, with `null`s when there is no hour. Written by hand:
    /// this Foundation's `JSONEncoder` does not keep a keyed container's order, and the reference writes `oldest`
    /// first; two numbers or `null` need no escaping.
    static func interval(oldest: Int64?, latest: Int64?) -> String {
        "{\"oldest\":\(oldest.map(String.init) ?? "null"),\"latest\":\(latest.map(String.init) ?? "null")}"
    }

    private static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        // Arrays of strings or numbers always encode.
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }
}
