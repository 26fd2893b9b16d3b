// The circuit-breaker routes of the NHS family (nhs §7) that decide: before a phone alerts its person of an exposure or a
// risky venue it asks for an approval; an officer's switch per kind and an automatic spike rule decide, and a held
// request waits for an officer.

import Crypto
import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics

/// The app's routes under `/circuit-breaker` (API key `mobile`, signed) and the portal's internal ones.
struct NHSCircuitBreakerController: Sendable {
    let store: any NHSCircuitBreakerRepository
    let settings: NHSCircuitBreakerSettings
    let clock: WallClock
    let metrics: any MetricsFactory

    /// Registers every request outcome of every kind at 0: `CircuitBreakerHeldByRule`
    /// (deploy/observability/alerts.yaml) reads `held_by_rule` with `increase()`, which a counter that first appeared
    /// at 1 would hide.
    init(
        store: any NHSCircuitBreakerRepository,
        settings: NHSCircuitBreakerSettings,
        clock: WallClock,
        metrics: any MetricsFactory
    ) {
        self.store = store
        self.settings = settings
        self.clock = clock
        self.metrics = metrics
        for kind in NHSCircuitBreakerKind.allCases {
            for outcome in Self.requestOutcomes {
                self.count(kind, "request", outcome, by: 0)
            }
        }
    }

    /// What `en_verification_nhs_circuit_breaker_total{action="request"}` counts: the answer, or `held_by_rule`.
    static let requestOutcomes = NHSApproval.allCases.map(\.rawValue) + ["held_by_rule"]

    var rule: NHSCircuitBreakerRule {
        NHSCircuitBreakerRule(multiple: self.settings.spikeMultiple, minimum: self.settings.spikeMinimum)
    }

    /// The portal's calls: the breakers' states, switching them, resolving a held request.
    static let stateRoute = InternalRoute(
        .post,
        "/version/v1",
        "nhs/circuit-breakers/state",
        callers: ["portal-service"]
    )
    static let switchRoute = InternalRoute(
        .post,
        "/version/v1",
        "nhs/circuit-breakers/switch",
        callers: ["portal-service"]
    )
    static let resolveRoute = InternalRoute(
        .post,
        "/version/v1",
        "nhs/circuit-breakers/resolve",
        callers: ["portal-service"]
    )
    static let internalRoutes = [Self.stateRoute, Self.switchRoute, Self.resolveRoute]

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
        group.on(Self.stateRoute) { _, _ in try await self.states() }
        group.on(Self.switchRoute) { request, context in
            try await self.setSwitch(request, context: context)
        }
        group.on(Self.resolveRoute) { request, context in
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

    private func count(_ kind: NHSCircuitBreakerKind, _ action: String, _ outcome: String, by amount: Int = 1) {
        Counter(
            label: "en_verification_nhs_circuit_breaker_total",
            dimensions: [("kind", kind.rawValue), ("action", action), ("outcome", outcome)],
            factory: self.metrics
        ).increment(by: amount)
    }
}

/// What an exposure-notification request must carry (nhs §7).
struct NHSExposureMatch: Decodable {
    var matchedKeyCount: Int
    var daysSinceLastExposure: Int
    var maximumRiskScore: Double
}
