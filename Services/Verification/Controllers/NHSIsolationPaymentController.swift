// The isolation payment routes of the NHS family (nhs §8): the app creates one when an isolation starts and unlocks it
// when the person claims; the payment website verifies and consumes it.

import Crypto
import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics

/// The app's routes (`create`, `update`: API key `mobile`, signed) and the payment website's (`verify-token`,
/// `consume-token`: API key `isolationPayment`, not signed) under `/isolation-payment/ipc-token`.
struct NHSIsolationPaymentController: Sendable {
    let store: any NHSIsolationPaymentRepository
    let settings: NHSIsolationPaymentSettings
    let clock: WallClock
    let metrics: any MetricsFactory

    /// The longest isolation an update may describe, from now (the reference's `maxIsolation` is 21 days).
    static let longestIsolation: TimeInterval = 28 * 86_400

    func addAppRoutes(to group: RouterGroup<some RequestContext>) {
        group.post("create") { request, context in try await self.create(request, context: context) }
        group.post("update") { request, context in try await self.update(request, context: context) }
    }

    func addWebsiteRoutes(to group: RouterGroup<some RequestContext>) {
        group.post("verify-token") { request, context in
            try await self.redeem(request, context: context, consume: false)
        }
        group.post("consume-token") { request, context in
            try await self.redeem(request, context: context, consume: true)
        }
    }

    /// POST …/create `{"country"}` → 201 `{"isEnabled":true,"ipcToken"}`, or `{"isEnabled":false}` for a country
    /// that cannot claim; 400 for a bad body, 503 while creation is off.
    func create(_ request: Request, context: some RequestContext) async throws -> Response {
        try self.requireEnabled()
        let body = try await Self.body(request, context: context)
        guard let country = body.string("country") else { throw NHSError(.badRequest, "country is required") }
        guard self.settings.countries.contains(country) else {
            self.count("create", "not_eligible")
            return try NHSResponse.json(.created, NHSIPCCreated(isEnabled: false, ipcToken: nil))
        }
        let now = self.clock.now
        let token = Self.newToken()
        guard
            try await self.store.create(
                tokenHash: SecretHash.sha256Hex(token),
                now: now,
                expiresAt: now.addingTimeInterval(self.settings.tokenLifetime.timeInterval)
            )
        else { throw NHSCollision() }
        self.audit("create", context: context)
        return try NHSResponse.json(.created, NHSIPCCreated(isEnabled: true, ipcToken: token))
    }

    /// POST …/update `{"ipcToken","riskyEncounterDate","isolationPeriodEndDate"}` → 200 with the claim page for the
    /// token, whether or not it was unlocked now (an unknown or already valid token changes nothing and is answered
    /// alike, so the answer tells nothing); 400 for a bad body, token or dates, 503 while creation is off.
    func update(_ request: Request, context: some RequestContext) async throws -> Response {
        try self.requireEnabled()
        let body = try await Self.body(request, context: context)
        let token = try Self.token(body)
        guard let encounter = body.string("riskyEncounterDate").flatMap(NHSInstant.parse),
            let end = body.string("isolationPeriodEndDate").flatMap(NHSInstant.parse)
        else {
            throw NHSError(.badRequest, "riskyEncounterDate and isolationPeriodEndDate must be ISO-8601 instants")
        }
        let now = self.clock.now
        guard encounter <= end, encounter <= now, encounter >= now.addingTimeInterval(-Self.longestIsolation),
            end > now,
            end <= now.addingTimeInterval(Self.longestIsolation)
        else {
            throw NHSError(
                .badRequest,
                "the encounter must be in the last 28 days and the isolation must end after it, in the next 28 days"
            )
        }
        let unlocked = try await self.store.unlock(
            tokenHash: SecretHash.sha256Hex(token),
            encounter: encounter,
            isolationEnd: end,
            now: now
        )
        if unlocked { self.audit("update", context: context) } else { self.count("update", "unchanged") }
        return try NHSResponse.json(.ok, ["websiteUrlWithQuery": "\(self.settings.website)?ipcToken=\(token)"])
    }

    /// POST …/verify-token and …/consume-token `{"contractVersion":1,"ipcToken"}` → 200 with the claim (`valid`) or
    /// `consumed`; 422 `invalid` for a token that is unknown, not yet unlocked, expired or consumed; 400 for a bad body.
    func redeem(_ request: Request, context: some RequestContext, consume: Bool) async throws -> Response {
        let body = try await Self.body(request, context: context)
        let token = try Self.token(body)
        let now = self.clock.now
        let hash = SecretHash.sha256Hex(token)
        let claim =
            consume
            ? try await self.store.consume(tokenHash: hash, now: now)
            : try await self.store.verify(tokenHash: hash, now: now)
        guard let claim else {
            self.count(consume ? "consume" : "verify", "invalid")
            return try NHSResponse.json(.unprocessableContent, NHSIPCState(ipcToken: token, state: "invalid"))
        }
        self.audit(consume ? "consume" : "verify", context: context)
        if consume { return try NHSResponse.json(.ok, NHSIPCState(ipcToken: token, state: "consumed")) }
        return try NHSResponse.json(
            .ok,
            NHSIPCState(
                ipcToken: token,
                state: "valid",
                riskyEncounterDate: NHSInstant.text(claim.riskyEncounterDate),
                isolationPeriodEndDate: NHSInstant.text(claim.isolationPeriodEndDate),
                createdTimestamp: NHSInstant.text(claim.createdAt),
                updatedTimestamp: NHSInstant.text(claim.updatedAt)
            )
        )
    }

    // MARK: - Helpers

    /// 32 random bytes as 64 lower-case hex digits.
    static func newToken() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { bytes in
            bytes.map { String(format: "%02x", $0) }.joined()
        }
    }

    /// 64 letters or digits (the reference's `[0-9A-Za-z]{64}`).
    static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == 64
            && token.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            }
    }

    private static func body(_ request: Request, context: some RequestContext) async throws -> NHSJSONObject {
        try await NHSJSONObject.read(request, context: context, error: NHSError(.badRequest, "not a JSON object"))
    }

    private static func token(_ body: NHSJSONObject) throws -> String {
        guard let token = body.string("ipcToken"), Self.isWellFormed(token) else {
            throw NHSError(.badRequest, "ipcToken must be 64 letters or digits")
        }
        return token
    }

    private func requireEnabled() throws {
        guard self.settings.creationEnabled else {
            throw NHSError(.serviceUnavailable, "isolation payment tokens are not issued now")
        }
    }

    /// The audit line of a transition (`create`, `update`, `verify`, `consume`): which one, never the token or its
    /// hash.
    private func audit(_ transition: String, context: some RequestContext) {
        self.count(transition, "ok")
        context.logger.notice(
            "audit: isolation payment token \(transition)",
            metadata: ["nhs.ipc.transition": "\(transition)"]
        )
    }

    private func count(_ action: String, _ outcome: String) {
        Counter(
            label: "en_verification_nhs_isolation_payment_total",
            dimensions: [("action", action), ("outcome", outcome)],
            factory: self.metrics
        ).increment()
    }
}

struct NHSIPCCreated: Encodable {
    var isEnabled: Bool
    var ipcToken: String?
}

/// The website's answer (`IsolationResponse`): the dates only for a `valid` token, nulls omitted.
struct NHSIPCState: Encodable {
    var contractVersion = 1
    var ipcToken: String
    var state: String
    var riskyEncounterDate: String? = nil
    var isolationPeriodEndDate: String? = nil
    var createdTimestamp: String? = nil
    var updatedTimestamp: String? = nil
}
