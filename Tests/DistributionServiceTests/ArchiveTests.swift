// Archive bytes: the export encoding against swift-protobuf, the TRL re-encoding, the ZIP container, and signatures
// checked by independent paths (swift-crypto with the public key only, and openssl).

import Crypto
import ENCrypto
import ENKeyStore
import ENModels
import Foundation
import SwiftProtobuf
import Testing

@testable import DistributionService

@Suite("Archives and signatures")
struct ArchiveTests {
    static func keys(_ count: Int) -> [DistributionKey] {
        var generator = SystemRandomNumberGenerator()
        var keys: [DistributionKey] = []
        for index in 0..<count {
            let start = Int32(2_900_000 + index * 144)
            let period = Int32(1 + index % 144)
            let trl = Int32(1 + index % 8)
            let data = KeyData(high: generator.next(), low: generator.next())
            keys.append(
                DistributionKey(
                    keyData: data,
                    rollingStartIntervalNumber: start,
                    rollingPeriod: period,
                    transmissionRiskLevel: trl,
                    submissionHour: 480_000,
                    originCountry: "DE",
                    visitedCountries: ["DE"]
                )
            )
        }
        return keys
    }

    static func signer(keys: Int = 1) -> ArchiveSigner {
        ArchiveSigner(
            keys: (0..<keys).map {
                SigningKey(privateKey: P256.Signing.PrivateKey(), keyID: "262", keyVersion: "v\($0 + 1)")
            },
            appBundleID: "de.rki.coronawarnapp"
        )
    }

    @Test("TRL → exported report type and DSOS follows the table of cwa-server §3.2")
    func trlEncoding() {
        let table: [(Int32, ReportType, Int)] = [
            (1, .recursive, 1), (2, .recursive, 2), (3, .selfReport, 1), (4, .selfReport, 2),
            (5, .confirmedClinicalDiagnosis, 1), (6, .confirmedClinicalDiagnosis, 2), (7, .confirmedTest, 1),
            (8, .confirmedTest, 2),
        ]
        for (trl, reportType, dsos) in table {
            let encoded = TRLEncoding.exported(trl: trl)
            #expect(encoded.reportType == reportType, "TRL \(trl)")
            #expect(encoded.daysSinceOnsetOfSymptoms == dsos, "TRL \(trl)")
        }
    }

    @Test("export.bin is the 16-byte header plus exactly what swift-protobuf encodes, keys in unsigned key_data order")
    func exportBytes() throws {
        let keys = Self.keys(300)
        let signer = Self.signer(keys: 2)
        let bin = KeyExportEncoder.exportBin(
            keys: keys,
            region: "DE",
            start: 1_000,
            end: 4_600,
            signatureInfos: signer.signatureInfos
        )
        #expect(Array(bin.prefix(16)) == Array("EK Export v1    ".utf8))

        var expected = TemporaryExposureKeyExport()
        expected.startTimestamp = 1_000
        expected.endTimestamp = 4_600
        expected.region = "DE"
        expected.batchNum = 1
        expected.batchSize = 1
        expected.signatureInfos = signer.signatureInfos
        expected.keys = keys.sorted { $0.keyData < $1.keyData }.map { key in
            var tek = TemporaryExposureKey()
            tek.keyData = Data(key.keyData.bytes)
            tek.transmissionRiskLevel = key.transmissionRiskLevel
            tek.rollingStartIntervalNumber = key.rollingStartIntervalNumber
            tek.rollingPeriod = key.rollingPeriod
            let encoding = TRLEncoding.exported(trl: key.transmissionRiskLevel)
            tek.reportType = encoding.reportType
            tek.daysSinceOnsetOfSymptoms = Int32(encoding.daysSinceOnsetOfSymptoms)
            return tek
        }
        let reference: [UInt8] = try expected.serializedBytes()
        #expect(Array(bin.dropFirst(16)) == reference)

        let parsed = try TemporaryExposureKeyExport(serializedBytes: Array(bin.dropFirst(16)))
        #expect(parsed.signatureInfos.map(\.verificationKeyVersion) == ["v1", "v2"])
        let order = parsed.keys.map { [UInt8]($0.keyData) }
        #expect(order == order.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(order.count == 300)
    }

    @Test("a key stored twice (rapid test, then PCR) is exported once")
    func duplicateKeyData() throws {
        var keys = Self.keys(3)
        var twin = keys[1]
        twin.transmissionRiskLevel = 8
        keys.append(twin)
        let bin = KeyExportEncoder.exportBin(keys: keys, region: "DE", start: 0, end: 3_600, signatureInfos: [])
        let parsed = try TemporaryExposureKeyExport(serializedBytes: Array(bin.dropFirst(16)))
        #expect(parsed.keys.count == 3)
        #expect(Set(parsed.keys.map(\.keyData)).count == 3)
    }

    /// Whether `signature` (DER) over `content` verifies with the public key of `key` alone.
    static func verifies(_ signature: TEKSignature, of content: [UInt8], with key: SigningKey) throws -> Bool {
        let publicKey = try P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM)
        let ecdsa = try P256.Signing.ECDSASignature(derRepresentation: signature.signature)
        return publicKey.isValidSignature(ecdsa, for: content)
    }

    @Test("an export without keys is still a valid message, signed so that the public key verifies it")
    func emptyExport() throws {
        let signer = Self.signer()
        let bin = KeyExportEncoder.exportBin(
            keys: [],
            region: "EUR",
            start: 0,
            end: 3_600,
            signatureInfos: signer.signatureInfos
        )
        let parsed = try TemporaryExposureKeyExport(serializedBytes: Array(bin.dropFirst(16)))
        let entries = try ZipArchive.entries(of: try signer.archive(content: bin))
        let list = try TEKSignatureList(serializedBytes: entries[1].data)
        let signature = try #require(list.signatures.first)
        var tampered = bin
        tampered[tampered.count - 1] ^= 1

        #expect(parsed.keys.isEmpty && parsed.region == "EUR" && parsed.endTimestamp == 3_600)
        #expect(parsed.signatureInfos == signer.signatureInfos)
        #expect(entries[0].data == bin)
        #expect(list.signatures.count == 1)
        #expect(try Self.verifies(signature, of: bin, with: signer.keys[0]))
        #expect(try !Self.verifies(signature, of: tampered, with: signer.keys[0]))
    }

    @Test("the ZIP holds exactly export.bin and export.sig, reads back, and unzip accepts it")
    func zipContainer() throws {
        let content = Array((0..<5_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let archive = try Self.signer().archive(content: content)
        let entries = try ZipArchive.entries(of: archive)
        #expect(entries.map(\.name) == ["export.bin", "export.sig"])
        #expect(entries[0].data == content)

        var damaged = archive
        damaged[40] ^= 0xFF
        #expect(throws: ZipArchive.ReadError.self) { try ZipArchive.entries(of: damaged) }

        let unzip = URL(fileURLWithPath: "/usr/bin/unzip")
        guard FileManager.default.isExecutableFile(atPath: unzip.path) else { return }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("archive-\(UUID().uuidString).zip")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(archive).write(to: file)
        let process = Process()
        process.executableURL = unzip
        process.arguments = ["-tqq", file.path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test("CRC-32 matches the standard check value")
    func crc() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
    }

    @Test("each configured key signs all of export.bin; the public keys alone verify, a changed byte fails")
    func twoKeySigning() throws {
        let signer = Self.signer(keys: 2)
        let bin = KeyExportEncoder.exportBin(
            keys: Self.keys(20),
            region: "DE",
            start: 0,
            end: 3_600,
            signatureInfos: signer.signatureInfos
        )
        let entries = try ZipArchive.entries(of: try signer.archive(content: bin))
        let list = try TEKSignatureList(serializedBytes: entries[1].data)
        #expect(list.signatures.count == 2)
        var tampered = bin
        tampered[20] ^= 1
        for (signature, key) in zip(list.signatures, signer.keys) {
            #expect(signature.batchNum == 1 && signature.batchSize == 1)
            #expect(signature.signatureInfo.signatureAlgorithm == "1.2.840.10045.4.3.2")
            #expect(signature.signatureInfo.verificationKeyID == "262")
            #expect(try Self.verifies(signature, of: bin, with: key))
            #expect(try !Self.verifies(signature, of: tampered, with: key))
        }
    }

    @Test("openssl verifies the signature with the public key PEM")
    func opensslVerifies() throws {
        let openssl = "/usr/bin/openssl"
        try #require(
            FileManager.default.isExecutableFile(atPath: openssl),
            "openssl is needed for the independent check"
        )
        let signer = Self.signer()
        let bin = KeyExportEncoder.exportBin(
            keys: Self.keys(5),
            region: "DE",
            start: 0,
            end: 3_600,
            signatureInfos: signer.signatureInfos
        )
        let list = try TEKSignatureList(
            serializedBytes: try ZipArchive.entries(of: try signer.archive(content: bin))[1].data
        )
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("openssl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(bin).write(to: folder.appendingPathComponent("export.bin"))
        try list.signatures[0].signature.write(to: folder.appendingPathComponent("export.sig.der"))
        try Data(signer.keys[0].publicKeyPEM.utf8).write(to: folder.appendingPathComponent("public.pem"))

        func verify(_ file: String) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: openssl)
            process.currentDirectoryURL = folder
            process.arguments = ["dgst", "-sha256", "-verify", "public.pem", "-signature", "export.sig.der", file]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        #expect(try verify("export.bin") == 0)
        var other = bin
        other[other.count - 1] ^= 1
        try Data(other).write(to: folder.appendingPathComponent("other.bin"))
        #expect(try verify("other.bin") != 0)
    }

    @Test(
        "signing keys load from PEM files as path[:id[:version]]; a missing or bad file names the file, never its content"
    )
    func signingKeyFiles() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("signing.pem").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        let plain = try SigningKey.load(entry: path)
        #expect(plain.keyID == "262" && plain.keyVersion == "v1")
        let named = try SigningKey.load(entry: "\(path):999:v7")
        #expect(named.keyID == "999" && named.keyVersion == "v7")
        // Printed by mistake, a key or the signer shows names only.
        let printed = "\(named) \(String(reflecting: named)) \(ArchiveSigner(keys: [named], appBundleID: "x"))"
        let material = Hex.encode(named.privateKey.rawRepresentation)
        #expect(!printed.contains(material) && !printed.contains("MHcCAQEE"))

        #expect(throws: SigningKeyError.self) {
            try SigningKey.load(entry: folder.appendingPathComponent("absent.pem").path)
        }
        let bad = folder.appendingPathComponent("bad.pem").path
        try "-----BEGIN EC PRIVATE KEY-----\nc2VjcmV0\n-----END EC PRIVATE KEY-----\n".write(
            toFile: bad,
            atomically: true,
            encoding: .utf8
        )
        do {
            _ = try SigningKey.load(entry: bad)
            Issue.record("a malformed key was accepted")
        } catch {
            #expect(error.description.contains(bad))
            #expect(!error.description.contains("c2VjcmV0"))
        }
    }
}
