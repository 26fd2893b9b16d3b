// Reconciliation of the key store against the published CDN tree: every key the plan publishes must be held by an
// archive a phone can reach from the indexes, and that archive must verify.

import Crypto
import ENKeyStore
import ENModels
import Foundation
import SwiftProtobuf

/// What an audit found, per key folder (`DE`, `EUR`).
struct AuditReport: Sendable, Equatable {
    struct Folder: Sendable, Equatable {
        var folder: String
        /// Distinct keys the plan puts into an archive of this folder up to the audited hour.
        var due = 0
        /// Listed archives read (day archives of the date index, hour archives of the hour indexes still kept).
        var archives = 0
        /// Listed archives that are missing, unreadable, of another region, or signed by none of the keys.
        var badArchives: [String] = []
        /// Keys due that no good listed archive holds, by the plan's hour (hours since the epoch), with their origins.
        var missing: [Int64: [String: Int]] = [:]

        var missingCount: Int { self.missing.values.reduce(0) { $0 + $1.values.reduce(0, +) } }
    }

    /// The hour the tree was audited as of: the plan of a run at this hour.
    var hour: Int64
    var folders: [Folder] = []

    var missingCount: Int { self.folders.reduce(0) { $0 + $1.missingCount } }
    var badArchiveCount: Int { self.folders.reduce(0) { $0 + $1.badArchives.count } }

    /// The report as an operator reads it: one line per folder, one per period with missing keys, then the total.
    var lines: [String] {
        var lines: [String] = []
        for folder in self.folders {
            lines.append(
                "\(folder.folder): \(folder.due) keys due, \(folder.due - folder.missingCount) in \(folder.archives) listed archives, \(folder.missingCount) missing"
            )
            for archive in folder.badArchives { lines.append("\(folder.folder): archive not usable: \(archive)") }
            for (hour, origins) in folder.missing.sorted(by: { $0.key < $1.key }) {
                let day = DistributionTime.day(ofHour: hour)
                let count = origins.values.reduce(0, +)
                let byOrigin = origins.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                    separator: ", "
                )
                lines.append(
                    "\(folder.folder) \(DistributionTime.isoDate(day: day)) hour \(hour - day * 24): \(count) missing (origin \(byOrigin))"
                )
            }
        }
        lines.append("\(self.missingCount) missing")
        return lines
    }
}

/// Reads the listed archives of each key folder from the store and checks them against a plan (`KeyBundler`'s
/// folders and hours). An archive counts when the indexes a phone reads name it: the day archives of the date index
/// and the hour archives of the hour indexes of the days still kept (`HOUR_FILE_RETENTION_DAYS`).
struct TreeAudit: Sendable {
    let store: any ObjectStore
    let policy: KeyDistributionPolicy
    /// The public keys the archives must be signed with (one verifying signature is enough).
    let publicKeys: [P256.Signing.PublicKey]

    func audit(_ plan: [String: FolderKeys], hour currentHour: Int64) async throws -> AuditReport {
        var report = AuditReport(hour: currentHour)
        for folder in [self.policy.originCountry, self.policy.euPackageName] {
            report.folders.append(
                try await self.audit(folder: folder, plan: plan[folder] ?? FolderKeys(), hour: currentHour)
            )
        }
        return report
    }

    private func audit(folder: String, plan: FolderKeys, hour currentHour: Int64) async throws -> AuditReport.Folder {
        var result = AuditReport.Folder(folder: folder)
        var due = plan.listed(at: currentHour, policy: self.policy)
        result.due = due.count
        for archive in try await self.listedArchives(folder: folder, hour: currentHour) {
            result.archives += 1
            guard let bytes = try await self.store.get(archive) else {
                result.badArchives.append("\(archive) (listed, not in the store)")
                continue
            }
            switch ArchiveContent.keys(of: bytes, region: folder, publicKeys: self.publicKeys) {
            case .success(let keys):
                for key in keys { due[key] = nil }
            case .failure(let problem):
                result.badArchives.append("\(archive) (\(problem))")
            }
        }
        for (_, entry) in due { result.missing[entry.hour, default: [:]][entry.origin.description, default: 0] += 1 }
        return result
    }

    /// The archives the folder's indexes list.
    func listedArchives(folder: String, hour currentHour: Int64) async throws -> [String] {
        var archives: [String] = []
        for day in try await self.index(CDNPaths.dates(folder)).compactMap({
            DistributionTime.day(isoDate: Substring($0))
        }) {
            archives.append(CDNPaths.day(folder, day))
        }
        let today = DistributionTime.day(ofHour: currentHour)
        for day in (today - Int64(self.policy.hourFileRetentionDays) + 1)...today {
            for hour in try await self.index(CDNPaths.hours(folder, day)).compactMap({ Int64($0) }) {
                archives.append(CDNPaths.hour(folder, day * 24 + hour))
            }
        }
        return archives
    }

    /// The entries of a JSON index (strings or numbers); none when the index is absent.
    private func index(_ key: String) async throws -> [String] {
        guard let bytes = try await self.store.get(key),
            let values = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [Any]
        else { return [] }
        return values.compactMap { value in
            if let text = value as? String { return text }
            if let number = value as? NSNumber { return number.stringValue }
            return nil
        }
    }

    /// The latest hour the origin folder's tree lists (an hour archive, or the last hour of a listed day); `nil` for an
    /// empty tree.
    func latestListedHour(today: Int64) async throws -> Int64? {
        let folder = self.policy.originCountry
        var latest: Int64?
        for day in try await self.index(CDNPaths.dates(folder)).compactMap({
            DistributionTime.day(isoDate: Substring($0))
        }) {
            latest = max(latest ?? Int64.min, day * 24 + 23)
        }
        for day in (today - Int64(self.policy.hourFileRetentionDays) + 1)...today {
            for hour in try await self.index(CDNPaths.hours(folder, day)).compactMap({ Int64($0) }) {
                latest = max(latest ?? Int64.min, day * 24 + hour)
            }
        }
        return latest
    }
}

/// The keys of a signed key archive (cwa-server §3.7), read as a phone's framework would: the header, the export's
/// region, and a signature over all of `export.bin` by one of the expected keys.
enum ArchiveContent {
    static func keys(
        of archive: [UInt8],
        region: String,
        publicKeys: [P256.Signing.PublicKey]
    ) -> Result<[KeyData], ArchiveProblem> {
        guard let entries = try? ZipArchive.entries(of: archive),
            let bin = entries.first(where: { $0.name == ExportFile.contentEntry })?.data,
            let sig = entries.first(where: { $0.name == ExportFile.signatureEntry })?.data
        else { return .failure(.unreadable) }
        guard bin.starts(with: ExportFile.header) else { return .failure(.unreadable) }
        guard let list = try? TEKSignatureList(serializedBytes: sig),
            list.signatures.contains(where: { signature in
                guard let der = try? P256.Signing.ECDSASignature(derRepresentation: signature.signature) else {
                    return false
                }
                return publicKeys.contains { $0.isValidSignature(der, for: bin) }
            })
        else { return .failure(.notSigned) }
        guard let export = ExportKeys(bin[ExportFile.header.count...]) else { return .failure(.unreadable) }
        guard export.region == region else { return .failure(.otherRegion(export.region)) }
        return .success(export.keys)
    }

    enum ArchiveProblem: Error, Equatable, CustomStringConvertible {
        case unreadable
        case notSigned
        case otherRegion(String)

        var description: String {
            switch self {
            case .unreadable: "not an archive of export.bin and export.sig"
            case .notSigned: "no signature by a configured key"
            case .otherRegion(let region): "of region \(region)"
            }
        }
    }
}

/// The region and the key data of a `TemporaryExposureKeyExport`, read field by field (a day of a national system
/// holds hundreds of thousands of keys; only field 3 and the `key_data` of field 7 are needed).
struct ExportKeys {
    var region = ""
    var keys: [KeyData] = []

    init?(_ bytes: ArraySlice<UInt8>) {
        var reader = ProtobufReader(bytes)
        while !reader.isAtEnd {
            guard let (field, wireType) = reader.tag() else { return nil }
            switch (field, wireType) {
            case (3, 2):
                guard let value = reader.lengthDelimited() else { return nil }
                self.region = String(decoding: value, as: UTF8.self)
            case (7, 2):
                guard let message = reader.lengthDelimited() else { return nil }
                var key = ProtobufReader(message)
                var data: KeyData?
                while !key.isAtEnd {
                    guard let (keyField, keyWire) = key.tag() else { return nil }
                    if keyField == 1, keyWire == 2 {
                        guard let value = key.lengthDelimited() else { return nil }
                        data = KeyData(value)
                    } else if !key.skip(keyWire) {
                        return nil
                    }
                }
                guard let data else { return nil }
                self.keys.append(data)
            default:
                guard reader.skip(wireType) else { return nil }
            }
        }
    }
}

/// Reading protobuf's wire format: tags, varints, length-delimited fields, skipping the rest.
struct ProtobufReader {
    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { self.bytes.isEmpty }

    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while let byte = self.bytes.popFirst() {
            guard shift < 64 else { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    mutating func tag() -> (field: UInt64, wireType: UInt64)? {
        guard let tag = self.varint() else { return nil }
        return (tag >> 3, tag & 7)
    }

    mutating func lengthDelimited() -> ArraySlice<UInt8>? {
        guard let length = self.varint(), length <= UInt64(self.bytes.count) else { return nil }
        let value = self.bytes.prefix(Int(length))
        self.bytes = self.bytes.dropFirst(Int(length))
        return value
    }

    /// Skips a value of `wireType`; `false` when the bytes end first or the type is unknown.
    mutating func skip(_ wireType: UInt64) -> Bool {
        switch wireType {
        case 0: return self.varint() != nil
        case 1, 5:
            let size = wireType == 1 ? 8 : 4
            guard self.bytes.count >= size else { return false }
            self.bytes = self.bytes.dropFirst(size)
            return true
        case 2: return self.lengthDelimited() != nil
        default: return false
        }
    }
}
