// Circuit-breaker approvals in memory, for route tests and local runs without a database.

import Foundation

/// The same rules as `PostgresNHSCircuitBreakerRepository`, guarded by the actor: each call runs whole, so a request
/// is decided against the switch as it is at that moment.
actor InMemoryNHSCircuitBreakerRepository: NHSCircuitBreakerRepository {
    private struct Switch {
        var mode: NHSApproval = .yes
        var quietUntil: Date?
    }

    private struct Request {
        let kind: NHSCircuitBreakerKind
        var approval: NHSApproval
        let byRule: Bool
        let createdAt: Date
        let expiresAt: Date
    }

    /// A token hash that names a request already: the table's primary key violation.
    struct DuplicateToken: Error {}

    private var switches: [NHSCircuitBreakerKind: Switch] = [:]
    private var minutes: [NHSCircuitBreakerKind: [Date: Int]] = [:]
    private var requests: [String: Request] = [:]

    init() {}

    func request(
        kind: NHSCircuitBreakerKind,
        tokenHash: String,
        rule: NHSCircuitBreakerRule,
        now: Date,
        expiresAt: Date
    ) throws -> (approval: NHSApproval, byRule: Bool, lastHour: Int) {
        guard self.requests[tokenHash] == nil else { throw DuplicateToken() }
        let minute = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60)
        self.minutes[kind, default: [:]][minute, default: 0] += 1
        let counts = self.counts(kind: kind, now: now)
        let (approval, byRule) = rule.decide(
            mode: counts.mode,
            lastHour: counts.lastHour,
            sameHour: counts.sameHour,
            quiet: (counts.quietUntil ?? .distantPast) > now
        )
        self.requests[tokenHash] = Request(
            kind: kind,
            approval: approval,
            byRule: byRule,
            createdAt: now,
            expiresAt: expiresAt
        )
        return (approval, byRule, counts.lastHour)
    }

    func counts(kind: NHSCircuitBreakerKind, now: Date) -> NHSCircuitBreakerCounts {
        let minutes = self.minutes[kind] ?? [:]
        let days = (0...7).map { day in
            let end = now.addingTimeInterval(-Double(day) * 86_400)
            let start = end.addingTimeInterval(-3600)
            return minutes.reduce(0) { sum, entry in entry.key > start && entry.key <= end ? sum + entry.value : sum }
        }
        let state = self.switches[kind] ?? Switch()
        return NHSCircuitBreakerCounts(
            lastHour: days[0],
            sameHour: Array(days[1...]),
            mode: state.mode,
            quietUntil: state.quietUntil
        )
    }

    func approval(tokenHash: String, kind: NHSCircuitBreakerKind, now: Date) -> NHSApproval? {
        guard let request = self.requests[tokenHash], request.kind == kind, request.expiresAt > now else { return nil }
        return request.approval
    }

    func setMode(_ mode: NHSApproval, kind: NHSCircuitBreakerKind, now: Date) {
        self.switches[kind, default: Switch()].mode = mode
    }

    func resolvePending(kind: NHSCircuitBreakerKind, approval: NHSApproval, now: Date, quietUntil: Date?) -> Int {
        let pending = self.requests.filter { _, request in
            request.kind == kind && request.approval == .pending && request.expiresAt > now
        }
        for hash in pending.keys { self.requests[hash]?.approval = approval }
        if let quietUntil { self.switches[kind, default: Switch()].quietUntil = quietUntil }
        return pending.count
    }

    func pending(kind: NHSCircuitBreakerKind, now: Date) -> (pending: Int, byRule: Int, oldest: Date?) {
        let pending = self.requests.values.filter { request in
            request.kind == kind && request.approval == .pending && request.expiresAt > now
        }
        return (pending.count, pending.filter(\.byRule).count, pending.map(\.createdAt).min())
    }

    func deleteExpired(now: Date) -> Int {
        let countsBefore = now.addingTimeInterval(-8 * 86_400)
        for kind in self.minutes.keys { self.minutes[kind] = self.minutes[kind]?.filter { $0.key > countsBefore } }
        let expired = self.requests.filter { $0.value.expiresAt <= now }.map(\.key)
        for hash in expired { self.requests[hash] = nil }
        return expired.count
    }
}
