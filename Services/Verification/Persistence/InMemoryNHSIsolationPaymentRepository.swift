// Isolation payment tokens in memory, for route tests and local runs without a database.

import Foundation

/// The same rules as `PostgresNHSIsolationPaymentRepository`, on a dictionary guarded by the actor.
actor InMemoryNHSIsolationPaymentRepository: NHSIsolationPaymentRepository {
    private struct Row {
        var claim: NHSIsolationClaim?
        let createdAt: Date
        var expiresAt: Date
        var validatedAt: Date?
    }

    private var rows: [String: Row] = [:]

    init() {}

    func create(tokenHash: String, now: Date, expiresAt: Date) -> Bool {
        guard self.rows[tokenHash] == nil else { return false }
        self.rows[tokenHash] = Row(claim: nil, createdAt: now, expiresAt: expiresAt)
        return true
    }

    func unlock(tokenHash: String, encounter: Date, isolationEnd: Date, now: Date) -> Bool {
        guard var row = self.rows[tokenHash], row.claim == nil, row.expiresAt > now else { return false }
        row.claim = NHSIsolationClaim(
            riskyEncounterDate: encounter,
            isolationPeriodEndDate: isolationEnd,
            createdAt: row.createdAt,
            updatedAt: now
        )
        row.expiresAt = isolationEnd
        self.rows[tokenHash] = row
        return true
    }

    func verify(tokenHash: String, now: Date) -> NHSIsolationClaim? {
        guard var row = self.rows[tokenHash], let claim = row.claim, row.expiresAt > now else { return nil }
        row.validatedAt = now
        self.rows[tokenHash] = row
        return claim
    }

    func consume(tokenHash: String, now: Date) -> NHSIsolationClaim? {
        guard let row = self.rows[tokenHash], let claim = row.claim, row.expiresAt > now else { return nil }
        self.rows[tokenHash] = nil
        return claim
    }

    func deleteExpired(now: Date) -> Int {
        let expired = self.rows.filter { $0.value.expiresAt <= now }.map(\.key)
        for hash in expired { self.rows[hash] = nil }
        return expired.count
    }
}
