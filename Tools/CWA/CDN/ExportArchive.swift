// Reading and verifying a signed CDN archive: a ZIP with export.bin and export.sig (cwa-server §3.7).

import ArgumentParser
import Crypto
import ENModels
import Foundation
import SwiftProtobuf

/// One archive, opened and checked.
struct ExportArchive {
    /// `export.bin` as it was signed.
    let content: [UInt8]
    let signatures: TEKSignatureList
    /// The key export, for archives that start with the `EK Export v1` header (key archives).
    let export: TemporaryExposureKeyExport?

    enum Failure: Error, CustomStringConvertible {
        case notAnArchive(String)
        case missingEntry(String)
        case badSignatureList
        case badExport

        var description: String {
            switch self {
            case .notAnArchive(let reason): "not a ZIP archive (\(reason))"
            case .missingEntry(let name): "the archive has no \(name)"
            case .badSignatureList: "export.sig is not a TEKSignatureList"
            case .badExport: "export.bin has the key-export header but no valid TemporaryExposureKeyExport"
            }
        }
    }

    init(bytes: [UInt8]) throws(Failure) {
        let entries: [ZipArchive.Entry]
        do {
            entries = try ZipArchive.entries(of: bytes)
        } catch {
            throw .notAnArchive("\(error)")
        }
        guard let content = entries.first(where: { $0.name == ExportFile.contentEntry })?.data else {
            throw .missingEntry(ExportFile.contentEntry)
        }
        guard let signature = entries.first(where: { $0.name == ExportFile.signatureEntry })?.data else {
            throw .missingEntry(ExportFile.signatureEntry)
        }
        guard let list = try? TEKSignatureList(serializedBytes: signature) else { throw .badSignatureList }
        self.content = content
        self.signatures = list
        if content.starts(with: ExportFile.header) {
            guard
                let export = try? TemporaryExposureKeyExport(
                    serializedBytes: Array(content.dropFirst(ExportFile.header.count))
                )
            else {
                throw .badExport
            }
            self.export = export
        } else {
            self.export = nil
        }
    }

    /// The signatures that `publicKey` verifies over all of `export.bin` (ECDSA P-256 SHA-256, DER).
    func verifiedSignatures(with publicKey: P256.Signing.PublicKey) -> [TEKSignature] {
        self.signatures.signatures.filter { entry in
            guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: entry.signature) else {
                return false
            }
            return publicKey.isValidSignature(signature, for: self.content)
        }
    }

    /// Keys in unsigned lexicographic order of their data, as the distribution writes them.
    var keysAreSorted: Bool {
        guard let keys = self.export?.keys else { return true }
        return zip(keys, keys.dropFirst()).allSatisfy {
            $0.keyData.lexicographicallyPrecedes($1.keyData) || $0.keyData == $1.keyData
        }
    }
}

/// The CDN's public key: PEM, P-256, as `openssl ec -pubout` writes it; from `--pubkey` or `CWA_CDN_PUBLIC_KEY`.
struct CDNKeyOptions: ParsableArguments {
    @Option(name: .customLong("pubkey"), help: "The CDN's PEM public key (env CWA_CDN_PUBLIC_KEY).")
    var publicKey: String?

    func load() throws -> (path: String, key: P256.Signing.PublicKey) {
        guard let path = self.publicKey ?? environment("CWA_CDN_PUBLIC_KEY") else {
            throw ValidationError("--pubkey (or CWA_CDN_PUBLIC_KEY) is required")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ClientFailure("cannot read the public key \(path)")
        }
        do {
            return (path, try P256.Signing.PublicKey(pemRepresentation: text))
        } catch {
            throw ClientFailure("\(path) is not a PEM P-256 public key")
        }
    }
}
