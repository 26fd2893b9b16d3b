// Circuit-breaker approvals in the `verification` database (migrations 0008, 0009).

import ENPersistence
import Foundation
import Logging
import PostgresNIO

/// `nhs_circuit_breaker_switch`, `nhs_circuit_breaker_request` and `nhs_circuit_breaker_count` (migration 0008).
struct PostgresNHSCircuitBreakerRepository: NHSCircuitBreakerRepository {
    let database: DatabasePool
    let logger: Logger

    init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    /// Decides a new request and stores it, in one transaction that holds the kind's switch row shared: a switch
    /// change or an officer's resolution (which lock it exclusively) sees every request decided before it, and none
    /// of the requests decided after it are left behind. The request is counted in its minute first, so the last hour
    /// includes it.
    func request(
        kind: NHSCircuitBreakerKind,
        tokenHash: String,
        rule: NHSCircuitBreakerRule,
        now: Date,
        expiresAt: Date
    ) async throws -> (approval: NHSApproval, byRule: Bool, lastHour: Int) {
        let minute = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60)
        return try await self.database.withTransaction(logger: self.logger) { connection in
            try await connection.runToEnd(
                "SELECT 1 FROM nhs_circuit_breaker_switch WHERE kind = \(kind.rawValue) FOR SHARE",
                logger: self.logger
            )
            try await connection.query(
                """
                INSERT INTO nhs_circuit_breaker_count (kind, minute, requests) VALUES (\(kind.rawValue), \(minute), 1)
                ON CONFLICT (kind, minute) DO UPDATE SET requests = nhs_circuit_breaker_count.requests + 1
                """,
                logger: self.logger
            )
            let counts = try await self.counts(kind: kind, now: now, on: connection)
            let (approval, byRule) = rule.decide(
                mode: counts.mode,
                lastHour: counts.lastHour,
                sameHour: counts.sameHour,
                quiet: (counts.quietUntil ?? .distantPast) > now
            )
            try await connection.query(
                """
                INSERT INTO nhs_circuit_breaker_request (token_hash, kind, approval, held_by_rule, created_at, expires_at)
                VALUES (\(tokenHash), \(kind.rawValue), \(approval.rawValue), \(byRule), \(now), \(expiresAt))
                """,
                logger: self.logger
            )
            return (approval, byRule, counts.lastHour)
        }
    }

    func counts(kind: NHSCircuitBreakerKind, now: Date) async throws -> NHSCircuitBreakerCounts {
        try await self.database.withConnection { connection in
            try await self.counts(kind: kind, now: now, on: connection)
        }
    }

    private func counts(
        kind: NHSCircuitBreakerKind,
        now: Date,
        on connection: PostgresConnection
    ) async throws
        -> NHSCircuitBreakerCounts
    {
        var counts = [Int](repeating: 0, count: 8)
        let rows = try await connection.query(
            """
            SELECT d, COALESCE(SUM(c.requests), 0)::bigint FROM generate_series(0, 7) AS d
            LEFT JOIN nhs_circuit_breaker_count c ON c.kind = \(kind.rawValue)
                AND c.minute > \(now) - make_interval(days => d, hours => 1)
                AND c.minute <= \(now) - make_interval(days => d)
            GROUP BY d
            """,
            logger: self.logger
        )
        for try await (day, requests) in rows.decode((Int, Int64).self) where (0...7).contains(day) {
            counts[day] = Int(requests)
        }
        let (mode, quiet) = try await self.switchRow(kind, on: connection)
        return NHSCircuitBreakerCounts(
            lastHour: counts[0],
            sameHour: Array(counts[1...]),
            mode: mode,
            quietUntil: quiet
        )
    }

    func approval(tokenHash: String, kind: NHSCircuitBreakerKind, now: Date) async throws -> NHSApproval? {
        let rows = try await self.database.query(
            """
            SELECT approval FROM nhs_circuit_breaker_request
            WHERE token_hash = \(tokenHash) AND kind = \(kind.rawValue) AND expires_at > \(now)
            """,
            logger: self.logger
        )
        guard let row = rows.first else { return nil }
        return NHSApproval(rawValue: try row.decode(String.self))
    }

    func setMode(_ mode: NHSApproval, kind: NHSCircuitBreakerKind, now: Date) async throws {
        try await self.database.query(
            """
            INSERT INTO nhs_circuit_breaker_switch (kind, mode, changed_at) VALUES (\(kind.rawValue), \(mode.rawValue), \(now))
            ON CONFLICT (kind) DO UPDATE SET mode = excluded.mode, changed_at = excluded.changed_at
            """,
            logger: self.logger
        )
    }

    func resolvePending(
        kind: NHSCircuitBreakerKind,
        approval: NHSApproval,
        now: Date,
        quietUntil: Date?
    ) async throws
        -> Int
    {
        try await self.database.withTransaction(logger: self.logger) { connection in
            // Exclusive: waits for requests being decided, and holds new ones back until this commits.
            try await connection.runToEnd(
                "SELECT 1 FROM nhs_circuit_breaker_switch WHERE kind = \(kind.rawValue) FOR UPDATE",
                logger: self.logger
            )
            let resolved = try await connection.query(
                """
                UPDATE nhs_circuit_breaker_request SET approval = \(approval.rawValue), resolved_at = \(now)
                WHERE kind = \(kind.rawValue) AND approval = 'pending' AND expires_at > \(now)
                RETURNING 1
                """,
                logger: self.logger
            ).collect().count
            if let quietUntil {
                try await connection.query(
                    """
                    INSERT INTO nhs_circuit_breaker_switch (kind, mode, changed_at, rule_quiet_until)
                    VALUES (\(kind.rawValue), 'yes', \(now), \(quietUntil))
                    ON CONFLICT (kind) DO UPDATE SET rule_quiet_until = excluded.rule_quiet_until
                    """,
                    logger: self.logger
                )
            }
            return resolved
        }
    }

    func pending(kind: NHSCircuitBreakerKind, now: Date) async throws -> (pending: Int, byRule: Int, oldest: Date?) {
        let rows = try await self.database.query(
            """
            SELECT count(*)::bigint, (count(*) FILTER (WHERE held_by_rule))::bigint, min(created_at)
            FROM nhs_circuit_breaker_request
            WHERE kind = \(kind.rawValue) AND approval = 'pending' AND expires_at > \(now)
            """,
            logger: self.logger
        )
        var pending = (0, 0, Date?.none)
        if let row = rows.first {
            let (all, byRule, oldest) = try row.decode((Int64, Int64, Date?).self)
            pending = (Int(all), Int(byRule), oldest)
        }
        return (pending.0, pending.1, pending.2)
    }

    func deleteExpired(now: Date) async throws -> Int {
        try await self.database.query(
            "DELETE FROM nhs_circuit_breaker_count WHERE minute <= \(now.addingTimeInterval(-8 * 86_400))",
            logger: self.logger
        )
        return try await self.database.query(
            "DELETE FROM nhs_circuit_breaker_request WHERE expires_at <= \(now) RETURNING 1",
            logger: self.logger
        ).count
    }

    private func switchRow(
        _ kind: NHSCircuitBreakerKind,
        on connection: PostgresConnection
    ) async throws -> (
        NHSApproval, Date?
    ) {
        let rows = try await connection.query(
            "SELECT mode, rule_quiet_until FROM nhs_circuit_breaker_switch WHERE kind = \(kind.rawValue)",
            logger: self.logger
        )
        for try await (mode, quiet) in rows.decode((String, Date?).self) {
            return (NHSApproval(rawValue: mode) ?? .pending, quiet)
        }
        return (.yes, nil)
    }
}
