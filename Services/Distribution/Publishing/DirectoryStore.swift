// The CDN tree in a local directory, served by the gateway as static files (cwa-server §3.5).

import ENModels
import Foundation

/// Stores objects as files under `root`. An object that is also a folder is the file `<key>/index` (the reference's
/// convention), so `…/country` is both a JSON file and the parent of `…/country/DE`. Files are written under a
/// hidden temporary name in the same folder and renamed over the target, so a reader sees the old or the new file,
/// never a part of one. The checksum is recomputed from the file, as the directory holds no metadata.
///
/// A signed object (the NHS documents) is one file holding its two signature headers, an empty line and the body, so
/// the signature and the bytes it signs are replaced together by one rename; the gateway serves the body with those
/// headers (`deploy/gateway/signed-files.js`).
struct DirectoryStore: ObjectStore {
    let root: URL
    private static let temporaryPrefix = ".tmp-"

    init(root: URL) {
        self.root = root.standardizedFileURL
    }

    var description: String { "directory \(self.root.path)" }

    func list(prefix: String) async throws -> Set<String> {
        let rootPath = self.root.path.hasSuffix("/") ? self.root.path : self.root.path + "/"
        guard let enumerator = FileManager.default.enumerator(atPath: rootPath) else { return [] }
        var keys: Set<String> = []
        while let relative = enumerator.nextObject() as? String {
            let name = (relative as NSString).lastPathComponent
            guard !name.hasPrefix(Self.temporaryPrefix) else { continue }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: rootPath + relative, isDirectory: &isDirectory),
                !isDirectory.boolValue
            else { continue }
            let key = name == "index" ? String(relative.dropLast("/index".count)) : relative
            if key.hasPrefix(prefix) { keys.insert(key) }
        }
        return keys
    }

    func checksum(of key: String) async throws -> String? {
        guard let path = self.existingFile(for: key), let data = FileManager.default.contents(atPath: path) else {
            return nil
        }
        let bytes = [UInt8](data)
        if let (signature, body) = Self.signedFile(bytes) {
            return CDNObject.signedChecksum(body, keyID: signature.keyID)
        }
        if bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]), let first = try? ZipArchive.entries(of: bytes).first {
            return CWAHash.of(first.data)
        }
        return CWAHash.of(bytes)
    }

    func get(_ key: String) async throws -> [UInt8]? {
        guard let path = self.existingFile(for: key), let data = FileManager.default.contents(atPath: path) else {
            return nil
        }
        let bytes = [UInt8](data)
        return Self.signedFile(bytes)?.1 ?? bytes
    }

    func put(_ object: CDNObject) async throws {
        let target = self.url(for: object.key, isDirectoryIndex: object.isDirectoryIndex)
        let folder = target.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let temporary = folder.appendingPathComponent(Self.temporaryPrefix + UUID().uuidString)
        let bytes = object.signature.map { Self.envelope($0, object.body) } ?? object.body
        do {
            try Self.writeNew(bytes, to: temporary.path)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        // rename(2) replaces the target atomically.
        guard rename(temporary.path, target.path) == 0 else {
            let code = errno
            try? FileManager.default.removeItem(at: temporary)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    /// The `.tmp-…` files of runs that died between writing a file and renaming it.
    func removeAbandoned() async throws -> Int {
        let rootPath = self.root.path.hasSuffix("/") ? self.root.path : self.root.path + "/"
        guard let enumerator = FileManager.default.enumerator(atPath: rootPath) else { return 0 }
        var removed = 0
        while let relative = enumerator.nextObject() as? String {
            guard (relative as NSString).lastPathComponent.hasPrefix(Self.temporaryPrefix) else { continue }
            try FileManager.default.removeItem(atPath: rootPath + relative)
            removed += 1
        }
        return removed
    }

    func delete(_ key: String) async throws {
        guard let path = self.existingFile(for: key) else { return }
        try FileManager.default.removeItem(atPath: path)
        // Prune folders left empty, up to the root.
        var folder = URL(fileURLWithPath: path).deletingLastPathComponent().standardizedFileURL
        while folder.path.count > self.root.path.count, folder.path.hasPrefix(self.root.path) {
            guard let contents = try? FileManager.default.contentsOfDirectory(atPath: folder.path), contents.isEmpty
            else { break }
            try? FileManager.default.removeItem(at: folder)
            folder = folder.deletingLastPathComponent()
        }
    }

    /// Writes `bytes` into a new file (mode 0644) at `path` itself: `FileManager.createFile` would write through a
    /// temporary file of its own (`.dat.nosync…`), which `removeAbandoned` would not know.
    private static func writeNew(_ bytes: [UInt8], to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o644) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                write(descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            written += result
        }
    }

    private func url(for key: String, isDirectoryIndex: Bool) -> URL {
        let url = self.root.appendingPathComponent(key)
        return isDirectoryIndex ? url.appendingPathComponent("index") : url
    }

    /// The file holding `key` as the gateway serves it: `<key>/index` when the key is a folder, `<key>` otherwise;
    /// `nil` when there is neither.
    func existingFile(for key: String) -> String? {
        let plain = self.root.appendingPathComponent(key).path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: plain, isDirectory: &isDirectory) else { return nil }
        guard isDirectory.boolValue else { return plain }
        let index = plain + "/index"
        return FileManager.default.fileExists(atPath: index) ? index : nil
    }
}

extension DirectoryStore {
    static let envelopePrefix = Array("X-Amz-Meta-Signature: ".utf8)

    /// `X-Amz-Meta-Signature: <value>\nX-Amz-Meta-Signature-Date: <date>\n\n<body>`.
    static func envelope(_ signature: CDNObject.Signature, _ body: [UInt8]) -> [UInt8] {
        Array("X-Amz-Meta-Signature: \(signature.value)\nX-Amz-Meta-Signature-Date: \(signature.date)\n\n".utf8) + body
    }

    /// The signature and body of a file `envelope` wrote; `nil` for any other file.
    static func signedFile(_ bytes: [UInt8]) -> (CDNObject.Signature, [UInt8])? {
        guard bytes.starts(with: Self.envelopePrefix),
            let end = bytes.indices.dropLast().first(where: { bytes[$0] == 0x0A && bytes[$0 + 1] == 0x0A })
        else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\n")
        let dateName = "X-Amz-Meta-Signature-Date: "
        guard lines.count == 2, lines[1].hasPrefix(dateName) else { return nil }
        let signature = CDNObject.Signature(
            value: String(lines[0].dropFirst(Self.envelopePrefix.count)),
            date: String(lines[1].dropFirst(dateName.count))
        )
        return (signature, Array(bytes[(end + 2)...]))
    }
}
