// The ZIP container of every CDN archive: written with stored entries, read back by tests and the client.

/// A minimal ZIP writer and reader for the archives of the CDN tree (`export.bin` + `export.sig`).
///
/// Entries are *stored* (method 0), not deflated as the reference's Java `ZipOutputStream` does: key data is random
/// and does not compress, ENF and the apps read stored entries like deflated ones, and storing keeps the archive a
/// plain concatenation that is fast to build and to check. Timestamps are fixed at 1980-01-01 00:00, so the same
/// entries always give the same bytes. Sizes stay below 4 GiB (a bundle holds at most 600,000 keys), so no ZIP64.
package enum ZipArchive {
    /// One file inside an archive.
    package struct Entry: Sendable, Equatable {
        package var name: String
        package var data: [UInt8]

        package init(name: String, data: [UInt8]) {
            self.name = name
            self.data = data
        }
    }

    /// Why an archive could not be read.
    package enum ReadError: Error, Equatable, CustomStringConvertible {
        case truncated
        case notAZip
        case unsupportedMethod(UInt16)
        case checksumMismatch(String)

        package var description: String {
            switch self {
            case .truncated: "the archive is truncated"
            case .notAZip: "not a ZIP archive (no end-of-central-directory record)"
            case .unsupportedMethod(let method):
                "entry compression method \(method) is not supported (only stored entries)"
            case .checksumMismatch(let name): "the CRC-32 of entry \(name) does not match its content"
            }
        }
    }

    private static let localHeaderSignature: UInt32 = 0x0403_4B50
    private static let centralHeaderSignature: UInt32 = 0x0201_4B50
    private static let endSignature: UInt32 = 0x0605_4B50
    /// 1980-01-01 in MS-DOS date format (the DOS epoch); the time is 00:00.
    private static let dosDate: UInt16 = 0x0021
    private static let versionNeeded: UInt16 = 10

    /// The archive holding `entries` in order.
    package static func make(_ entries: [Entry]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(entries.reduce(22) { $0 + $1.data.count + 2 * $1.name.utf8.count + 76 })
        var central: [UInt8] = []
        for entry in entries {
            let name = Array(entry.name.utf8)
            let crc = CRC32.checksum(entry.data)
            let offset = UInt32(out.count)
            out.appendLE(self.localHeaderSignature)
            out.appendLE(self.versionNeeded)
            out.appendLE(UInt16(0))  // flags
            out.appendLE(UInt16(0))  // method: stored
            out.appendLE(UInt16(0))  // time
            out.appendLE(self.dosDate)
            out.appendLE(crc)
            out.appendLE(UInt32(entry.data.count))
            out.appendLE(UInt32(entry.data.count))
            out.appendLE(UInt16(name.count))
            out.appendLE(UInt16(0))  // extra length
            out.append(contentsOf: name)
            out.append(contentsOf: entry.data)

            central.appendLE(self.centralHeaderSignature)
            central.appendLE(UInt16(20))  // made by: MS-DOS, spec 2.0
            central.appendLE(self.versionNeeded)
            central.appendLE(UInt16(0))
            central.appendLE(UInt16(0))
            central.appendLE(UInt16(0))
            central.appendLE(self.dosDate)
            central.appendLE(crc)
            central.appendLE(UInt32(entry.data.count))
            central.appendLE(UInt32(entry.data.count))
            central.appendLE(UInt16(name.count))
            central.appendLE(UInt16(0))  // extra
            central.appendLE(UInt16(0))  // comment
            central.appendLE(UInt16(0))  // disk
            central.appendLE(UInt16(0))  // internal attributes
            central.appendLE(UInt32(0))  // external attributes
            central.appendLE(offset)
            central.append(contentsOf: name)
        }
        let centralOffset = UInt32(out.count)
        out.append(contentsOf: central)
        out.appendLE(self.endSignature)
        out.appendLE(UInt16(0))
        out.appendLE(UInt16(0))
        out.appendLE(UInt16(entries.count))
        out.appendLE(UInt16(entries.count))
        out.appendLE(UInt32(central.count))
        out.appendLE(centralOffset)
        out.appendLE(UInt16(0))  // comment length
        return out
    }

    /// The entries of an archive with stored entries, in central-directory order, each checked against its CRC-32.
    package static func entries(of archive: [UInt8]) throws(ReadError) -> [Entry] {
        guard archive.count >= 22 else { throw .notAZip }
        var end = archive.count - 22
        let lowest = max(0, archive.count - 22 - 0xFFFF)
        while end >= lowest, archive.readLE32(at: end) != self.endSignature { end -= 1 }
        guard end >= lowest else { throw .notAZip }
        let count = Int(archive.readLE16(at: end + 10))
        var cursor = Int(archive.readLE32(at: end + 16))
        var entries: [Entry] = []
        for _ in 0..<count {
            guard cursor + 46 <= archive.count, archive.readLE32(at: cursor) == self.centralHeaderSignature else {
                throw .truncated
            }
            let method = archive.readLE16(at: cursor + 10)
            let crc = archive.readLE32(at: cursor + 16)
            let size = Int(archive.readLE32(at: cursor + 20))
            let nameLength = Int(archive.readLE16(at: cursor + 28))
            let extraLength = Int(archive.readLE16(at: cursor + 30))
            let commentLength = Int(archive.readLE16(at: cursor + 32))
            let localOffset = Int(archive.readLE32(at: cursor + 42))
            guard cursor + 46 + nameLength <= archive.count else { throw .truncated }
            let name = String(decoding: archive[(cursor + 46)..<(cursor + 46 + nameLength)], as: UTF8.self)
            guard method == 0 else { throw .unsupportedMethod(method) }
            guard localOffset + 30 <= archive.count, archive.readLE32(at: localOffset) == self.localHeaderSignature
            else {
                throw .truncated
            }
            let dataStart =
                localOffset + 30 + Int(archive.readLE16(at: localOffset + 26))
                + Int(archive.readLE16(at: localOffset + 28))
            guard dataStart + size <= archive.count else { throw .truncated }
            let data = Array(archive[dataStart..<(dataStart + size)])
            guard CRC32.checksum(data) == crc else { throw .checksumMismatch(name) }
            entries.append(Entry(name: name, data: data))
            cursor += 46 + nameLength + extraLength + commentLength
        }
        return entries
    }
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) as ZIP uses it, eight bytes per step.
package enum CRC32 {
    /// Eight 256-entry tables, one after the other: table k gives the CRC of a byte followed by k zero bytes.
    private static let table: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            table[byte] = crc
        }
        for slice in 1..<8 {
            for byte in 0..<256 {
                let previous = table[(slice - 1) * 256 + byte]
                table[slice * 256 + byte] = (previous >> 8) ^ table[Int(previous & 0xFF)]
            }
        }
        return table
    }()

    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        bytes.withUnsafeBufferPointer { buffer in
            self.table.withUnsafeBufferPointer { tables in
                var index = 0
                let count = buffer.count
                while index + 8 <= count {
                    let low =
                        crc
                        ^ (UInt32(buffer[index]) | UInt32(buffer[index + 1]) << 8
                            | UInt32(buffer[index + 2]) << 16 | UInt32(buffer[index + 3]) << 24)
                    crc =
                        tables[7 * 256 + Int(low & 0xFF)] ^ tables[6 * 256 + Int((low >> 8) & 0xFF)]
                        ^ tables[5 * 256 + Int((low >> 16) & 0xFF)] ^ tables[4 * 256 + Int(low >> 24)]
                        ^ tables[3 * 256 + Int(buffer[index + 4])] ^ tables[2 * 256 + Int(buffer[index + 5])]
                        ^ tables[1 * 256 + Int(buffer[index + 6])] ^ tables[Int(buffer[index + 7])]
                    index += 8
                }
                while index < count {
                    crc = (crc >> 8) ^ tables[Int((crc ^ UInt32(buffer[index])) & 0xFF)]
                    index += 1
                }
            }
        }
        return ~crc
    }
}

extension [UInt8] {
    fileprivate mutating func appendLE(_ value: UInt16) {
        self.append(UInt8(truncatingIfNeeded: value))
        self.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    fileprivate mutating func appendLE(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { self.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    fileprivate func readLE16(at offset: Int) -> UInt16 {
        guard offset + 2 <= self.count else { return 0 }
        return UInt16(self[offset]) | UInt16(self[offset + 1]) << 8
    }

    fileprivate func readLE32(at offset: Int) -> UInt32 {
        guard offset + 4 <= self.count else { return 0 }
        return UInt32(self[offset]) | UInt32(self[offset + 1]) << 8 | UInt32(self[offset + 2]) << 16 | UInt32(
            self[offset + 3]
        ) << 24
    }
}
