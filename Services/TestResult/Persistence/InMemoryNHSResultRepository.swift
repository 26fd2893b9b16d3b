// The NHS path's results in memory, for route tests and local runs without a database.

import ENNHS
import Foundation

/// The same rules as `PostgresNHSResultRepository`, on a dictionary guarded by the actor: a hash is taken until its
/// row is deleted, even after it expired.
actor InMemoryNHSResultRepository: NHSResultRepository {
    private struct Row {
        var result: NHSStoredResult
        let expiresAt: Date
    }

    private var rows: [String: Row] = [:]

    init() {}

    func createOrder(ctaHash: String, otherHashes: [String], now: Date, expiresAt: Date) -> Bool {
        self.insert(NHSStoredResult(ctaHash: ctaHash, status: .pending), otherHashes: otherHashes, expiresAt: expiresAt)
    }

    func createAvailable(
        ctaHash: String,
        otherHashes: [String],
        result: NHSLabResult,
        now: Date,
        expiresAt: Date
    ) -> Bool {
        self.insert(Self.available(ctaHash, result), otherHashes: otherHashes, expiresAt: expiresAt)
    }

    func createAvailable(
        _ entries: [(ctaHash: String, result: NHSLabResult)],
        otherHashes: [String],
        now: Date,
        expiresAt: Date
    ) throws {
        let hashes = entries.map(\.ctaHash)
        guard Set(hashes).count == hashes.count, !(hashes + otherHashes).contains(where: { self.rows[$0] != nil })
        else { throw NHSCollision() }
        for entry in entries {
            self.rows[entry.ctaHash] = Row(result: Self.available(entry.ctaHash, entry.result), expiresAt: expiresAt)
        }
    }

    func upload(candidates: [String], result: NHSLabResult, now: Date) -> NHSUploadOutcome {
        guard let hash = self.unexpired(candidates, now: now) else { return .noOrder }
        guard self.rows[hash]?.result.status == .pending else { return .alreadyAvailable }
        self.rows[hash]?.result = Self.available(hash, result)
        return .stored
    }

    func find(candidates: [String], now: Date) -> NHSStoredResult? {
        self.unexpired(candidates, now: now).flatMap { self.rows[$0]?.result }
    }

    func deleteExpired(now: Date) -> Int {
        let expired = self.rows.filter { $0.value.expiresAt <= now }.map(\.key)
        for hash in expired { self.rows[hash] = nil }
        return expired.count
    }

    private func insert(_ result: NHSStoredResult, otherHashes: [String], expiresAt: Date) -> Bool {
        guard !([result.ctaHash] + otherHashes).contains(where: { self.rows[$0] != nil }) else { return false }
        self.rows[result.ctaHash] = Row(result: result, expiresAt: expiresAt)
        return true
    }

    private func unexpired(_ candidates: [String], now: Date) -> String? {
        candidates.first { self.rows[$0].map { $0.expiresAt > now } ?? false }
    }

    private static func available(_ hash: String, _ result: NHSLabResult) -> NHSStoredResult {
        NHSStoredResult(
            ctaHash: hash,
            status: .available,
            testEndDate: result.testEndDate,
            testResult: result.testResult,
            testKit: result.testKit
        )
    }
}
