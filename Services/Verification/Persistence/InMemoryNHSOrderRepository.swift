// NHS orders and submission tokens in memory, for route tests and local runs without a database.

import Foundation

/// The same rules as `PostgresNHSOrderRepository`, on dictionaries guarded by the actor: a CTA hash, a polling token
/// hash and a submission token hash each name at most one order, as the tables' unique keys do.
actor InMemoryNHSOrderRepository: NHSOrderRepository {
    private struct Row {
        let order: NHSOrder
        let pollingTokenHash: String?
        var downloadCount: Int
        let createdAt: Date
        var expiresAt: Date
        var submissionExpiresAt: Date
        var submittedAt: Date?
        var submittedBy: UUID?
    }

    /// A hash that names an order already: the unique keys' violation.
    struct DuplicateHash: Error {}

    private var rows: [Int64: Row] = [:]
    private var byCTA: [String: Int64] = [:]
    private var byPolling: [String: Int64] = [:]
    private var bySubmissionToken: [String: Int64] = [:]
    private var nextID: Int64 = 1

    init() {}

    func createOrder(
        ctaHash: String,
        pollingTokenHash: String,
        submissionTokenHash: String,
        now: Date,
        expiresAt: Date
    ) throws {
        guard self.byCTA[ctaHash] == nil, self.byPolling[pollingTokenHash] == nil,
            self.bySubmissionToken[submissionTokenHash] == nil
        else { throw DuplicateHash() }
        let id = self.insert(
            ctaHash: ctaHash,
            pollingTokenHash: pollingTokenHash,
            downloadCount: 0,
            now: now,
            expiresAt: expiresAt,
            submissionExpiresAt: expiresAt
        )
        self.bySubmissionToken[submissionTokenHash] = id
    }

    func order(pollingTokenHash: String, now: Date) -> NHSOrder? {
        self.byPolling[pollingTokenHash].flatMap { self.unexpired($0, now: now) }
    }

    func order(ctaCandidates: [String], now: Date) -> NHSOrder? {
        ctaCandidates.lazy.compactMap { self.byCTA[$0].flatMap { self.unexpired($0, now: now) } }.first
    }

    func markRead(orderID: Int64, positive: Bool, now: Date) {
        guard var row = self.rows[orderID] else { return }
        row.expiresAt = now.addingTimeInterval(NHSOrderLifetime.afterRead)
        if positive { row.submissionExpiresAt = now.addingTimeInterval(NHSOrderLifetime.submissionAfterRead) }
        self.rows[orderID] = row
    }

    func exchange(ctaHash: String, submissionTokenHash: String, positive: Bool, now: Date) throws -> Bool {
        guard self.bySubmissionToken[submissionTokenHash] == nil else { throw DuplicateHash() }
        let orderUntil = now.addingTimeInterval(NHSOrderLifetime.afterRead)
        let submissionUntil = now.addingTimeInterval(
            positive ? NHSOrderLifetime.submissionAfterRead : NHSOrderLifetime.afterRead
        )
        let id: Int64
        if let existing = self.byCTA[ctaHash], var row = self.rows[existing] {
            guard row.downloadCount < 2, row.expiresAt > now else { return false }
            row.downloadCount += 1
            row.expiresAt = orderUntil
            row.submissionExpiresAt = max(row.submissionExpiresAt, submissionUntil)
            self.rows[existing] = row
            id = existing
        } else {
            id = self.insert(
                ctaHash: ctaHash,
                pollingTokenHash: nil,
                downloadCount: 1,
                now: now,
                expiresAt: orderUntil,
                submissionExpiresAt: submissionUntil
            )
        }
        self.bySubmissionToken[submissionTokenHash] = id
        return true
    }

    func submittable(tokenHash: String, now: Date) -> NHSOrder? {
        guard let id = self.bySubmissionToken[tokenHash], let row = self.rows[id], row.submittedAt == nil,
            row.submissionExpiresAt > now
        else { return nil }
        return row.order
    }

    func redemption(tokenHash: String) -> NHSOrderRedemption? {
        guard let id = self.bySubmissionToken[tokenHash], let row = self.rows[id] else { return nil }
        return NHSOrderRedemption(order: row.order, submitted: row.submittedAt != nil, submittedBy: row.submittedBy)
    }

    func markSubmitted(orderID: Int64, now: Date, by submission: UUID?) -> Bool {
        guard var row = self.rows[orderID], row.submittedAt == nil, row.submissionExpiresAt > now else { return false }
        row.submittedAt = now
        row.submittedBy = submission
        self.rows[orderID] = row
        return true
    }

    func deleteExpired(now: Date) -> Int {
        let resultsGoneBefore = now.addingTimeInterval(-NHSOrderLifetime.untilRead)
        let expired = self.rows.filter { _, row in
            max(row.expiresAt, row.submissionExpiresAt) <= now && row.createdAt <= resultsGoneBefore
        }
        for (id, row) in expired {
            self.rows[id] = nil
            self.byCTA[row.order.ctaHash] = nil
            if let polling = row.pollingTokenHash { self.byPolling[polling] = nil }
        }
        self.bySubmissionToken = self.bySubmissionToken.filter { expired[$0.value] == nil }
        return expired.count
    }

    private func insert(
        ctaHash: String,
        pollingTokenHash: String?,
        downloadCount: Int,
        now: Date,
        expiresAt: Date,
        submissionExpiresAt: Date
    ) -> Int64 {
        let id = self.nextID
        self.nextID += 1
        self.rows[id] = Row(
            order: NHSOrder(id: id, ctaHash: ctaHash),
            pollingTokenHash: pollingTokenHash,
            downloadCount: downloadCount,
            createdAt: now,
            expiresAt: expiresAt,
            submissionExpiresAt: submissionExpiresAt
        )
        self.byCTA[ctaHash] = id
        if let pollingTokenHash { self.byPolling[pollingTokenHash] = id }
        return id
    }

    private func unexpired(_ id: Int64, now: Date) -> NHSOrder? {
        guard let row = self.rows[id], row.expiresAt > now else { return nil }
        return row.order
    }
}
