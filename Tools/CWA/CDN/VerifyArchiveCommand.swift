// `cwa verify-archive FILE --pubkey PEM`: what an archive holds and whether its signature verifies.

import ArgumentParser
import ENModels
import Foundation

struct VerifyArchiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-archive",
        abstract: "Check a CDN archive: its entries, the export header and fields, and every signature."
    )

    @Argument(help: "The archive (a key, app-configuration or trace-warning archive).")
    var file: String
    @OptionGroup var cdnKey: CDNKeyOptions

    func run() async throws {
        let (publicKeyFile, key) = try self.cdnKey.load()
        guard let bytes = FileManager.default.contents(atPath: self.file) else {
            throw ClientFailure("cannot read \(self.file)")
        }
        let archive: ExportArchive
        do {
            archive = try ExportArchive(bytes: Array(bytes))
        } catch {
            throw ClientFailure("\(self.file): \(error)")
        }
        print(
            "archive: \(ExportFile.contentEntry) \(archive.content.count) bytes, \(ExportFile.signatureEntry) with \(archive.signatures.signatures.count) signature(s)"
        )
        if let export = archive.export {
            let start = Date(timeIntervalSince1970: TimeInterval(export.startTimestamp))
            let end = Date(timeIntervalSince1970: TimeInterval(export.endTimestamp))
            print("header: \"EK Export v1\" (16 bytes)")
            print(
                "export: region \(export.region), window \(start.formatted(.iso8601)) – \(end.formatted(.iso8601)), batch \(export.batchNum) of \(export.batchSize), \(export.keys.count) keys, sorted by key data: \(archive.keysAreSorted ? "yes" : "NO")"
            )
            for info in export.signatureInfos {
                print(
                    "signature info: key id \(info.verificationKeyID), version \(info.verificationKeyVersion), algorithm \(info.signatureAlgorithm), bundle \(info.appBundleID)"
                )
            }
        } else {
            print("header: none (not a key archive: app configuration or trace warnings)")
        }
        let verified = archive.verifiedSignatures(with: key)
        for signature in archive.signatures.signatures {
            let ok = verified.contains(signature)
            print(
                "signature \(signature.signatureInfo.verificationKeyID)/\(signature.signatureInfo.verificationKeyVersion): \(ok ? "verified" : "does NOT verify") with \(publicKeyFile)"
            )
        }
        guard !verified.isEmpty, archive.keysAreSorted else {
            print("FAILED")
            throw ExitCode(1)
        }
        print("OK")
    }
}
