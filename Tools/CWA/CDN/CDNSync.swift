// What a phone downloads from the CDN: the date and hour indexes of a country, the archives it has not seen yet,
// every signature checked with the CDN's public key.

import Crypto
import ENModels
import Foundation

/// A download of new key archives.
struct CDNSync {
    let client: GatewayClient
    let baseURL: String
    let country: String
    let publicKey: P256.Signing.PublicKey

    /// One archive fetched and verified.
    struct Archive {
        let path: String
        let keys: [TemporaryExposureKey]
        let verifiedSignatures: Int
    }

    /// What a sync found.
    struct Outcome {
        var archives: [Archive] = []
        /// Archives whose signature did not verify (their keys are not used).
        var rejected: [(path: String, reason: String)] = []
    }

    /// Day archives listed in the date index, and hour archives of the days that have an hour index (today and
    /// yesterday), skipping the paths in `known`.
    func run(skipping known: Set<String>, now: Date) async throws -> Outcome {
        let root = "version/v1/diagnosis-keys/country/\(self.country)/date"
        let days: [String] = try await self.index(root) ?? []
        var paths = days.map { "\(root)/\($0)" }
        let today = utcDay(now)
        let yesterday = utcDay(now.addingTimeInterval(-86_400))
        for day in Set([yesterday, today]).sorted() {
            let hours: [Int] = try await self.index("\(root)/\(day)/hour") ?? []
            paths += hours.map { "\(root)/\(day)/hour/\($0)" }
        }
        var outcome = Outcome()
        for path in paths where !known.contains(path) {
            let reply = try await self.client.get("\(self.baseURL)/\(path)")
            guard reply.status == 200 else {
                outcome.rejected.append((path, "HTTP \(reply.status)"))
                continue
            }
            do {
                let archive = try ExportArchive(bytes: reply.body)
                let verified = archive.verifiedSignatures(with: self.publicKey).count
                guard verified > 0 else {
                    outcome.rejected.append((path, "no signature verifies with the public key"))
                    continue
                }
                outcome.archives.append(
                    Archive(path: path, keys: archive.export?.keys ?? [], verifiedSignatures: verified)
                )
            } catch {
                outcome.rejected.append((path, "\(error)"))
            }
        }
        return outcome
    }

    /// A JSON index, or nil when the CDN has none (404).
    private func index<T: Decodable>(_ path: String) async throws -> T? {
        let reply = try await self.client.get("\(self.baseURL)/\(path)")
        if reply.status == 404 { return nil }
        guard reply.status == 200 else { throw ClientFailure("GET /\(path): HTTP \(reply.status)") }
        return try decodeJSON(T.self, from: reply, what: "the index /\(path)")
    }
}
