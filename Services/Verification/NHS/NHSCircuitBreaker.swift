// Circuit breakers of the NHS family (nhs §7) that decide: before a phone alerts its person of an exposure or a
// risky venue it asks for an approval; an officer's switch per kind and an automatic spike rule decide, and a held
// request waits for an officer.

import Crypto
import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics
import PostgresNIO

/// The two kinds of approval, as they appear in the paths.
enum NHSCircuitBreakerKind: String, Sendable, CaseIterable, Codable {
    case exposureNotification = "exposure-notification"
    case venue
}

/// An approval: `yes` (alert), `no` (stay silent), `pending` (ask again later).
enum NHSApproval: String, Sendable, CaseIterable, Codable {
    case yes, no, pending
}

/// `NHS_CB_*`: how long a token answers, and when the automatic rule holds requests.
struct NHSCircuitBreakerSettings: Sendable {
    /// `NHS_CB_TOKEN_LIFETIME`: how long an approval token can be polled (24 h).
    var tokenLifetime: Duration
    /// `NHS_CB_SPIKE_MULTIPLE`: the rule holds new requests when the last hour's exceed this multiple of the median of
    /// the same hour on the 7 days before (3).
    var spikeMultiple: Int
    /// `NHS_CB_SPIKE_MINIMUM`: ... and at least this many (100), so a quiet week does not hold every request.
    var spikeMinimum: Int
    /// How long an officer's release quiets the rule (1 h): the spike was judged genuine.
    var releaseQuiet: Duration = .seconds(3600)

    init(settings: SettingsReader) {
        self.tokenLifetime = settings.duration(
            "NHS_CB_TOKEN_LIFETIME",
            default: .seconds(86_400),
            minimum: .seconds(60),
            help: "How long a circuit-breaker approval token answers its resolution polls."
        )
        self.spikeMultiple = settings.int(
            "NHS_CB_SPIKE_MULTIPLE",
            default: 3,
            range: 1...1000,
            help: "Hold new circuit-breaker requests when the last hour's exceed this multiple of the 7-day median of "
                + "the same hour."
        )
        self.spikeMinimum = settings.int(
            "NHS_CB_SPIKE_MINIMUM",
            default: 100,
            range: 1...100_000_000,
            help: "The automatic rule holds requests only above this many in the last hour."
        )
    }
}

/// The requests of one kind in the last hour and in the same hour of the 7 days before; the switch and quiet time.
struct NHSCircuitBreakerCounts: Sendable, Equatable {
    var lastHour: Int
    var sameHour: [Int]
    var mode: NHSApproval
    var quietUntil: Date?
}

/// `nhs_circuit_breaker_switch`, `nhs_circuit_breaker_request` and `nhs_circuit_breaker_count` (migration 0008).
struct NHSCircuitBreakerStore: Sendable {
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
            try await connection.query(
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

    /// The counts as `count` returns them, without counting a request.
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

    /// The approval of an unexpired token of `kind`.
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

    /// Sets the officer's switch of `kind`.
    func setMode(_ mode: NHSApproval, kind: NHSCircuitBreakerKind, now: Date) async throws {
        try await self.database.query(
            """
            INSERT INTO nhs_circuit_breaker_switch (kind, mode, changed_at) VALUES (\(kind.rawValue), \(mode.rawValue), \(now))
            ON CONFLICT (kind) DO UPDATE SET mode = excluded.mode, changed_at = excluded.changed_at
            """,
            logger: self.logger
        )
    }

    /// Answers every pending, unexpired request of `kind` with `approval`; a release (`yes`) also quiets the rule
    /// until `quietUntil`. Returns how many requests were answered.
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
            try await connection.query(
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

    /// How many requests of `kind` are pending (and how many of them the rule held), and since when.
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

    /// Deletes expired requests and counts older than eight days; returns how many requests.
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

/// The decision for a new request, from the officer's switch and the spike rule.
struct NHSCircuitBreakerRule: Sendable, Equatable {
    var multiple: Int
    var minimum: Int

    /// The median of the 7 earlier days' counts (the lower middle of an even count never arises: there are 7).
    static func median(_ counts: [Int]) -> Int {
        guard !counts.isEmpty else { return 0 }
        return counts.sorted()[counts.count / 2]
    }

    /// The count of the last hour above which the rule holds requests.
    func threshold(sameHour: [Int]) -> Int {
        max(self.multiple * Self.median(sameHour), self.minimum)
    }

    /// What a new request is answered, and whether the rule (not the switch) held it.
    func decide(mode: NHSApproval, lastHour: Int, sameHour: [Int], quiet: Bool) -> (NHSApproval, byRule: Bool) {
        switch mode {
        case .no: return (.no, false)
        case .pending: return (.pending, false)
        case .yes:
            if !quiet && lastHour > self.threshold(sameHour: sameHour) { return (.pending, true) }
            return (.yes, false)
        }
    }
}

/// The app's routes under `/circuit-breaker` (API key `mobile`, signed) and the portal's internal ones.
struct NHSCircuitBreakerController: Sendable {
    let store: NHSCircuitBreakerStore
    let settings: NHSCircuitBreakerSettings
    let clock: WallClock
    let metrics: any MetricsFactory

    var rule: NHSCircuitBreakerRule {
        NHSCircuitBreakerRule(multiple: self.settings.spikeMultiple, minimum: self.settings.spikeMinimum)
    }

    static let internalRoutes: Set<String> = [
        "POST /version/v1/nhs/circuit-breakers/state", "POST /version/v1/nhs/circuit-breakers/switch",
        "POST /version/v1/nhs/circuit-breakers/resolve",
    ]

    func addRoutes(to group: RouterGroup<some RequestContext>) {
        for kind in NHSCircuitBreakerKind.allCases {
            group.post("\(kind.rawValue)/request") { request, context in
                try await self.request(kind: kind, request, context: context)
            }
            group.get("\(kind.rawValue)/resolution/{token}") { _, context in
                try await self.resolution(kind: kind, token: context.parameters.get("token"), context: context)
            }
            // The reference answers an empty token 422 (`…/resolution/`).
            group.get("\(kind.rawValue)/resolution") { _, _ -> Response in
                throw NHSError.validation("approval token is required")
            }
        }
    }

    func addInternalRoutes(to group: RouterGroup<some RequestContext>) {
        group.post("nhs/circuit-breakers/state") { _, _ in try await self.states() }
        group.post("nhs/circuit-breakers/switch") { request, context in
            try await self.setSwitch(request, context: context)
        }
        group.post("nhs/circuit-breakers/resolve") { request, context in
            try await self.resolve(request, context: context)
        }
    }

    // MARK: - App

    /// POST /circuit-breaker/exposure-notification/request `{"matchedKeyCount","daysSinceLastExposure",
    /// "maximumRiskScore"}` (venue: any body, read and dropped unparsed, so no venue id is ever held) → 200
    /// `{"approvalToken","approval"}`; 422 for an exposure request without its three numbers.
    func request(kind: NHSCircuitBreakerKind, _ request: Request, context: some RequestContext) async throws -> Response
    {
        let buffer = try await request.body.collect(upTo: context.maxUploadSize)
        if kind == .exposureNotification {
            // Two whole numbers and a number (not booleans, not strings); other members, the version among them, are
            // ignored as the reference does.
            guard (try? JSONDecoder().decode(NHSExposureMatch.self, from: Data(buffer.readableBytesView))) != nil else {
                throw NHSError.validation("Content type is not text/json")
            }
        }
        let now = self.clock.now
        let token = Self.newToken()
        let (approval, byRule, lastHour) = try await self.store.request(
            kind: kind,
            tokenHash: SecretHash.sha256Hex(token),
            rule: self.rule,
            now: now,
            expiresAt: now.addingTimeInterval(self.settings.tokenLifetime.timeInterval)
        )
        self.count(kind, "request", byRule ? "held_by_rule" : approval.rawValue)
        if byRule {
            context.logger.notice(
                "circuit breaker holds a request: spike over the 7-day median",
                metadata: ["nhs.cb.kind": "\(kind.rawValue)", "nhs.cb.last_hour": "\(lastHour)"]
            )
        }
        return try NHSResponse.json(.ok, ["approvalToken": token, "approval": approval.rawValue])
    }

    /// GET /circuit-breaker/<kind>/resolution/<token> → 200 `{"approval"}`; 404 for an unknown or expired token.
    func resolution(kind: NHSCircuitBreakerKind, token: String?, context: some RequestContext) async throws -> Response
    {
        guard let token, !token.isEmpty else { throw NHSError.validation("approval token is required") }
        guard token.utf8.count == 50,
            let approval = try await self.store.approval(
                tokenHash: SecretHash.sha256Hex(token),
                kind: kind,
                now: self.clock.now
            )
        else {
            self.count(kind, "resolution", "unknown")
            throw NHSError(.notFound, "unknown or expired approval token")
        }
        self.count(kind, "resolution", approval.rawValue)
        return try NHSResponse.json(.ok, ["approval": approval.rawValue])
    }

    // MARK: - Portal (internal)

    /// POST /version/v1/nhs/circuit-breakers/state (any body) → `{"kinds":[state…]}`.
    func states() async throws -> Response {
        let now = self.clock.now
        var states: [NHSCircuitBreakerState] = []
        for kind in NHSCircuitBreakerKind.allCases {
            let pending = try await self.store.pending(kind: kind, now: now)
            let hours = try await self.store.counts(kind: kind, now: now)
            states.append(
                NHSCircuitBreakerState(
                    kind: kind.rawValue,
                    mode: hours.mode.rawValue,
                    pending: pending.pending,
                    pendingByRule: pending.byRule,
                    oldestPending: pending.oldest.map(NHSInstant.text),
                    lastHour: hours.lastHour,
                    sameHourMedian: NHSCircuitBreakerRule.median(hours.sameHour),
                    threshold: self.rule.threshold(sameHour: hours.sameHour),
                    ruleQuietUntil: hours.quietUntil.flatMap {
                        $0 > now ? NHSInstant.text($0) : nil
                    }
                )
            )
        }
        return try NHSResponse.json(.ok, ["kinds": states])
    }

    /// POST /version/v1/nhs/circuit-breakers/switch `{"kind","mode"}` → 200 with the new states.
    func setSwitch(_ request: Request, context: some RequestContext) async throws -> Response {
        let body = try await NHSJSONObject.read(request, context: context, error: Self.badBody)
        guard let kind = body.string("kind").flatMap(NHSCircuitBreakerKind.init(rawValue:)),
            let mode = body.string("mode").flatMap(NHSApproval.init(rawValue:))
        else { throw Self.badBody }
        try await self.store.setMode(mode, kind: kind, now: self.clock.now)
        context.logger.notice(
            "audit: circuit breaker switch set",
            metadata: ["nhs.cb.kind": "\(kind.rawValue)", "nhs.cb.mode": "\(mode.rawValue)"]
        )
        return try await self.states()
    }

    /// POST /version/v1/nhs/circuit-breakers/resolve `{"kind","approval":"yes|no"}` → 200 `{"resolved":n}`: every
    /// pending request of the kind gets the approval; a release also quiets the rule for an hour.
    func resolve(_ request: Request, context: some RequestContext) async throws -> Response {
        let body = try await NHSJSONObject.read(request, context: context, error: Self.badBody)
        guard let kind = body.string("kind").flatMap(NHSCircuitBreakerKind.init(rawValue:)),
            let approval = body.string("approval").flatMap(NHSApproval.init(rawValue:)), approval != .pending
        else { throw Self.badBody }
        let now = self.clock.now
        let resolved = try await self.store.resolvePending(
            kind: kind,
            approval: approval,
            now: now,
            quietUntil: approval == .yes ? now.addingTimeInterval(self.settings.releaseQuiet.timeInterval) : nil
        )
        context.logger.notice(
            "audit: circuit breaker pending requests resolved",
            metadata: [
                "nhs.cb.kind": "\(kind.rawValue)", "nhs.cb.approval": "\(approval.rawValue)",
                "nhs.cb.resolved": "\(resolved)",
            ]
        )
        return try NHSResponse.json(.ok, ["resolved": resolved])
    }

    // MARK: - Helpers

    private static let badBody = NHSError(
        .badRequest,
        "expects {\"kind\":\"exposure-notification|venue\",\"mode|approval\":\"yes|no|pending\"}"
    )

    static let tokenAlphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

    /// 50 characters of `[0-9A-Za-z]`, drawn without bias.
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(
            (0..<50).map { _ in Self.tokenAlphabet[Int.random(in: 0..<Self.tokenAlphabet.count, using: &generator)] }
        )
    }

    private func count(_ kind: NHSCircuitBreakerKind, _ action: String, _ outcome: String) {
        Counter(
            label: "en_verification_nhs_circuit_breaker_total",
            dimensions: [("kind", kind.rawValue), ("action", action), ("outcome", outcome)],
            factory: self.metrics
        ).increment()
    }
}

/// What an exposure-notification request must carry (nhs §7).
struct NHSExposureMatch: Decodable {
    var matchedKeyCount: Int
    var daysSinceLastExposure: Int
    var maximumRiskScore: Double
}
