// Signing archives with one or more P-256 keys held in memory (cwa-server §3.7).

import Crypto
import ENModels
import Foundation
import SwiftProtobuf

/// A signing key and what phones learn about it from `SignatureInfo`. Its description names the key, never its
/// material, so a configuration printed by mistake leaks nothing.
struct SigningKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    let privateKey: P256.Signing.PrivateKey
    let keyID: String
    let keyVersion: String

    /// One `SIGNING_KEY_FILES` entry: `path[:key id[:version]]`, the id defaulting to 262 (Germany's MCC) and the
    /// version to `v1`. The file is a PEM EC P-256 private key (SEC 1 or PKCS #8).
    static func load(entry: String) throws(SigningKeyError) -> SigningKey {
        var parts = entry.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        var version = "v1"
        var keyID = "262"
        if parts.count >= 3 { version = parts.removeLast() }
        if parts.count >= 2 { keyID = parts.removeLast() }
        let path = parts.joined(separator: ":")
        guard !path.isEmpty, !keyID.isEmpty, !version.isEmpty else {
            throw SigningKeyError(path: entry, problem: "is not of the form path[:key id[:version]]")
        }
        let pem: String
        do {
            pem = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SigningKeyError(path: path, problem: "cannot be read (\(error.localizedDescription))")
        }
        do {
            return SigningKey(
                privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem),
                keyID: keyID,
                keyVersion: version
            )
        } catch {
            // The error text of a PEM parser could quote key material; say only what kind of file was expected.
            throw SigningKeyError(path: path, problem: "is not a PEM EC P-256 private key")
        }
    }

    var description: String { "signing key \(self.keyID)/\(self.keyVersion)" }
    var debugDescription: String { self.description }

    /// The public key, PEM, for the operator and the client that verifies archives.
    var publicKeyPEM: String { self.privateKey.publicKey.pemRepresentation }
}

/// Why a signing key could not be loaded; names the file, never its content.
struct SigningKeyError: Error, CustomStringConvertible, Equatable {
    let path: String
    let problem: String

    var description: String { "signing key \(self.path) \(self.problem)" }
}

/// Signs `export.bin` with every configured key and packs the archive.
struct ArchiveSigner: Sendable {
    let keys: [SigningKey]
    /// `app_bundle_id` of every signature info (`de.rki.coronawarnapp`, or `-dev` for development keys).
    let appBundleID: String

    /// One `SignatureInfo` per key, in configuration order.
    var signatureInfos: [SignatureInfo] {
        self.keys.map { key in
            var info = SignatureInfo()
            info.appBundleID = self.appBundleID
            info.verificationKeyVersion = key.keyVersion
            info.verificationKeyID = key.keyID
            info.signatureAlgorithm = ExportFile.signatureAlgorithm
            return info
        }
    }

    /// `export.sig`: a `TEKSignatureList` with one DER ECDSA-SHA256 signature over all of `content` per key.
    func signatureList(for content: [UInt8]) throws -> [UInt8] {
        var list = TEKSignatureList()
        for (key, info) in zip(self.keys, self.signatureInfos) {
            var signature = TEKSignature()
            signature.signatureInfo = info
            signature.batchNum = 1
            signature.batchSize = 1
            signature.signature = try key.privateKey.signature(for: content).derRepresentation
            list.signatures.append(signature)
        }
        return try list.serializedBytes()
    }

    /// The archive: `export.bin` then `export.sig`.
    func archive(content: [UInt8]) throws -> [UInt8] {
        ZipArchive.make([
            ZipArchive.Entry(name: ExportFile.contentEntry, data: content),
            ZipArchive.Entry(name: ExportFile.signatureEntry, data: try self.signatureList(for: content)),
        ])
    }
}
