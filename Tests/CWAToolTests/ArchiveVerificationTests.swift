// Verifying a CDN archive with the public key only.

import Crypto
import ENModels
import Foundation
import SwiftProtobuf
import Testing

@testable import CWATool

@Suite("cwa archive verification")
struct ArchiveVerificationTests {
    static func archive(keys: [[UInt8]], signingKey: P256.Signing.PrivateKey, tamper: Bool = false) throws -> [UInt8] {
        var export = TemporaryExposureKeyExport()
        export.region = "DE"
        export.batchNum = 1
        export.batchSize = 1
        export.keys = keys.map { data in
            var key = TemporaryExposureKey()
            key.keyData = Data(data)
            key.rollingStartIntervalNumber = 2_990_016
            key.rollingPeriod = 144
            key.transmissionRiskLevel = 6
            return key
        }
        var content = ExportFile.header + (try export.serializedBytes() as [UInt8])
        var signature = TEKSignature()
        signature.signature = try signingKey.signature(for: content).derRepresentation
        var list = TEKSignatureList()
        list.signatures = [signature]
        if tamper { content[content.count - 1] ^= 1 }
        return ZipArchive.make([
            ZipArchive.Entry(name: ExportFile.contentEntry, data: content),
            ZipArchive.Entry(name: ExportFile.signatureEntry, data: try list.serializedBytes()),
        ])
    }

    @Test("an archive verifies with the signer's public key only, not after a bit flips, and its key order is checked")
    func archiveVerification() throws {
        let signer = P256.Signing.PrivateKey()
        let sortedKeys: [[UInt8]] = [[0x01] + Array(repeating: 0, count: 15), [0x80] + Array(repeating: 0, count: 15)]

        let good = try ExportArchive(bytes: try Self.archive(keys: sortedKeys, signingKey: signer))
        let tampered = try ExportArchive(bytes: try Self.archive(keys: sortedKeys, signingKey: signer, tamper: true))
        let unsorted = try ExportArchive(bytes: try Self.archive(keys: sortedKeys.reversed(), signingKey: signer))

        #expect(good.verifiedSignatures(with: signer.publicKey).count == 1)
        #expect(good.verifiedSignatures(with: P256.Signing.PrivateKey().publicKey).isEmpty)
        #expect(tampered.verifiedSignatures(with: signer.publicKey).isEmpty)
        #expect(good.export?.keys.count == 2)
        #expect(good.keysAreSorted)
        #expect(!unsorted.keysAreSorted)
        #expect(throws: ExportArchive.Failure.self) { try ExportArchive(bytes: Array("not a zip".utf8)) }
        #expect(throws: ExportArchive.Failure.self) {
            try ExportArchive(
                bytes: ZipArchive.make([ZipArchive.Entry(name: ExportFile.contentEntry, data: [1, 2, 3])])
            )
        }
    }
}
