// The NHS test path at verification-service (nhs.md §3.2–§3.4): test orders, result polls, CTA exchanges, and the
// submission-token check submission-service makes.

import ENCrypto
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics

/// The app routes under `/virology-test` (API key `mobile`, every answer signed) and the internal verification of
/// diagnosis key submission tokens.
struct NHSVirologyController: Sendable {
    let store: NHSOrderStore
    let testResults: any TestResultClient
    let pepper: KeyRing
    let clock: WallClock
    /// `NHS_ORDER_WEBSITE` and `NHS_REGISTER_WEBSITE`: where the app sends the person with the CTA token.
    let orderWebsite: String
    let registerWebsite: String
    /// How long every CTA exchange takes, whatever its outcome (the reference's `throttlingResponse`).
    let exchangeDuration: Duration
    let metrics: any MetricsFactory
    /// Draws a new CTA token (tests draw known ones, to collide).
    var newCTAToken: @Sendable () -> CTAToken = { CTAToken.random() }

    /// Four weeks: an order's lifetime until a result is read (nhs.md §3.2).
    static let orderLifetime: TimeInterval = 28 * 86_400

    func addRoutes(to group: RouterGroup<some RequestContext>) {
        group.post("v2/order") { _, context in try await self.order(website: self.orderWebsite, context: context) }
        group.post("home-kit/order") { _, context in
            try await self.order(website: self.orderWebsite, context: context)
        }
        group.post("home-kit/register") { _, context in
            try await self.order(website: self.registerWebsite, context: context)
        }
        group.post("v2/results") { request, context in try await self.results(request, context: context, v2: true) }
        group.post("results") { request, context in try await self.results(request, context: context, v2: false) }
        group.post("v2/cta-exchange") { request, context in
            try await self.exchange(request, context: context, v2: true)
        }
        group.post("cta-exchange") { request, context in
            try await self.exchange(request, context: context, v2: false)
        }
    }

    /// The internal route submission-service calls, under `/version/v1`.
    func addInternalRoutes(to group: RouterGroup<some RequestContext>) {
        group.post("nhs/submission-token/verify") { request, context in
            try await self.verifySubmissionToken(request, context: context)
        }
    }

    static let internalRoute = "POST /version/v1/nhs/submission-token/verify"

    // MARK: - Order

    /// POST /virology-test/v2/order (and the V1 `home-kit/order`, `home-kit/register`); the body is ignored →
    /// 200 with the CTA token, its website link, the polling token and the submission token.
    func order(website: String, context: some RequestContext) async throws -> Response {
        let now = self.clock.now
        for _ in 0..<3 {
            let cta = self.newCTAToken()
            let hashes = self.pepper.pepperedCandidates(cta.value)
            let ctaHash = hashes[0]
            let created: Bool
            do {
                created = try await self.testResults.nhsCreateOrder(ctaHashes: hashes)
            } catch {
                self.count("order", "unavailable")
                context.logger.warning("NHS order refused: test-result-service unavailable")
                throw Self.unavailable
            }
            guard created else { continue }
            let polling = UUID().uuidString.lowercased()
            let submission = UUID().uuidString.lowercased()
            try await self.store.createOrder(
                ctaHash: ctaHash,
                pollingTokenHash: SecretHash.sha256Hex(polling),
                submissionTokenHash: SecretHash.sha256Hex(submission),
                now: now,
                expiresAt: now.addingTimeInterval(Self.orderLifetime)
            )
            self.count("order", "created")
            return try NHSResponse.json(
                .ok,
                NHSOrderResponse(
                    websiteUrlWithQuery: "\(website)?ctaToken=\(cta.value)",
                    tokenParameterValue: cta.value,
                    testResultPollingToken: polling,
                    diagnosisKeySubmissionToken: submission
                )
            )
        }
        throw NHSCollision()
    }

    // MARK: - Results

    /// POST /virology-test/v2/results `{"testResultPollingToken", "country"}` (V1 without `country`) → 200 with the
    /// result, 204 while it is pending or hidden from this app (§3.4), 404 for an unknown or expired token, 422 for a
    /// bad body.
    func results(_ request: Request, context: some RequestContext, v2: Bool) async throws -> Response {
        let body = try await NHSJSONObject.read(
            request,
            context: context,
            error: .validation("unable to deserialize payload")
        )
        guard let token = body.string("testResultPollingToken") else {
            throw NHSError.validation("testResultPollingToken is required")
        }
        let country = body.string("country")
        if v2 && country == nil { throw NHSError.validation("country is required") }
        let now = self.clock.now
        let unknown = NHSError(.notFound, "Test result lookup submitted for unknown testResultPollingToken")
        guard
            let order = try await self.store.order(pollingTokenHash: SecretHash.sha256Hex(token.lowercased()), now: now)
        else {
            self.count("results", "unknown")
            throw unknown
        }
        guard let reported = try await self.lookup([order.ctaHash], route: "results", context: context) else {
            self.count("results", "unknown")
            throw unknown
        }
        guard let (date, result, kit) = reported.available else {
            self.count("results", "pending")
            return Response(status: .noContent)
        }
        guard let policy = Self.policy(request, v2: v2, country: country, result: result, kit: kit) else {
            self.count("results", "hidden")
            return Response(status: .noContent)
        }
        try await self.store.markRead(orderID: order.id, positive: result == .positive, now: now)
        self.count("results", "available")
        return try NHSResponse.json(
            .ok,
            NHSResultResponse(
                testEndDate: date,
                testResult: result,
                testKit: kit,
                diagnosisKeySubmissionSupported: v2 ? policy.diagnosisKeySubmissionSupported : nil,
                requiresConfirmatoryTest: v2 ? policy.requiresConfirmatoryTest : nil
            )
        )
    }

    // MARK: - CTA exchange

    /// POST /virology-test/v2/cta-exchange `{"ctaToken", "country"}` (V1 without `country`) → 200 with a submission
    /// token and the result, 204 while pending, 404 for an unknown or expired token, one exchanged twice already or a
    /// result hidden from this app, 400 for a bad body or token. Every outcome takes `exchangeDuration` (at least), so
    /// the time of an answer tells nothing about the token.
    func exchange(_ request: Request, context: some RequestContext, v2: Bool) async throws -> Response {
        let deadline = ContinuousClock.now.advanced(by: self.exchangeDuration)
        let outcome: Result<Response, any Error>
        do {
            outcome = .success(try await self.exchangeNow(request, context: context, v2: v2))
        } catch {
            outcome = .failure(error)
        }
        try? await Task.sleep(until: deadline, clock: .continuous)
        return try outcome.get()
    }

    private func exchangeNow(_ request: Request, context: some RequestContext, v2: Bool) async throws -> Response {
        let body = try await NHSJSONObject.read(request, context: context, error: NHSError(.badRequest, "not JSON"))
        guard let text = body.string("ctaToken"), let cta = CTAToken(text) else {
            self.count("cta_exchange", "invalid")
            throw NHSError(.badRequest, "ctaToken is not a valid CTA token")
        }
        let country = body.string("country")
        if v2 && country == nil { throw NHSError(.badRequest, "country is required") }
        let now = self.clock.now
        let notFound = NHSError(.notFound)
        let candidates = self.pepper.pepperedCandidates(cta.value)
        let order = try await self.store.order(ctaCandidates: candidates, now: now)
        guard
            let reported = try await self.lookup(
                order.map { [$0.ctaHash] } ?? candidates,
                route: "cta_exchange",
                context: context
            )
        else {
            self.count("cta_exchange", "unknown")
            throw notFound
        }
        guard let (date, result, kit) = reported.available else {
            self.count("cta_exchange", "pending")
            return Response(status: .noContent)
        }
        guard let policy = Self.policy(request, v2: v2, country: country, result: result, kit: kit) else {
            self.count("cta_exchange", "hidden")
            throw notFound
        }
        let submission = UUID().uuidString.lowercased()
        guard
            try await self.store.exchange(
                ctaHash: reported.ctaHash,
                submissionTokenHash: SecretHash.sha256Hex(submission),
                positive: result == .positive,
                now: now
            )
        else {
            self.count("cta_exchange", "exhausted")
            throw notFound
        }
        self.count("cta_exchange", "exchanged")
        return try NHSResponse.json(
            .ok,
            NHSExchangeResponse(
                diagnosisKeySubmissionToken: submission,
                testResult: result,
                testEndDate: date,
                testKit: kit,
                diagnosisKeySubmissionSupported: v2 ? policy.diagnosisKeySubmissionSupported : nil,
                requiresConfirmatoryTest: v2 ? policy.requiresConfirmatoryTest : nil
            )
        )
    }

    // MARK: - Submission tokens

    /// POST /version/v1/nhs/submission-token/verify `{"diagnosisKeySubmissionToken"}` → 200 `{"testKit"}` when the
    /// token belongs to an unexpired order with a positive result whose keys were not submitted yet (and marks them
    /// submitted: one success per order, also under concurrency); 404 otherwise; 400 for a bad body.
    func verifySubmissionToken(_ request: Request, context: some RequestContext) async throws -> Response {
        let body = try await NHSJSONObject.read(request, context: context, error: NHSError(.badRequest, "not JSON"))
        guard let token = body.string("diagnosisKeySubmissionToken"), token.utf8.count <= 64 else {
            throw NHSError(.badRequest, "diagnosisKeySubmissionToken is required")
        }
        let now = self.clock.now
        guard
            let order = try await self.store.submittable(tokenHash: SecretHash.sha256Hex(token.lowercased()), now: now),
            let reported = try await self.lookup([order.ctaHash], route: "submission_token", context: context),
            let (_, result, kit) = reported.available, result == .positive,
            try await self.store.markSubmitted(orderID: order.id, now: now)
        else {
            self.count("submission_token", "rejected")
            return Response(status: .notFound)
        }
        self.count("submission_token", "valid")
        return try NHSResponse.json(.ok, ["testKit": kit.rawValue])
    }

    // MARK: - Helpers

    /// The policy of §3.4 for the asking app, or `nil` when the result is hidden from it (V1: self-reported rapid
    /// tests; V2: apps up to 4.3 when a confirmatory test is required).
    private static func policy(
        _ request: Request,
        v2: Bool,
        country: String?,
        result: NHSTestResult,
        kit: NHSTestKit
    ) -> NHSVirologyPolicy? {
        let policy = NHSVirologyPolicy(country: country, result: result, kit: kit)
        let hidden =
            v2 ? policy.hidesV2(from: NHSUserAgent(request.headers[.userAgent])) : NHSVirologyPolicy.hidesV1(kit)
        return hidden ? nil : policy
    }

    private static let unavailable = NHSError(
        .serviceUnavailable,
        "test results are unavailable; try again later",
        headers: [.retryAfter: "30"]
    )

    private func lookup(
        _ hashes: [String],
        route: String,
        context: some RequestContext
    ) async throws -> NHSResultReport? {
        do {
            return try await self.testResults.nhsResult(ctaHashes: hashes)
        } catch {
            self.count(route, "unavailable")
            context.logger.warning("NHS request refused: test-result-service unavailable")
            throw Self.unavailable
        }
    }

    private func count(_ route: String, _ outcome: String) {
        Counter(
            label: "en_verification_nhs_requests_total",
            dimensions: [("route", route), ("outcome", outcome)],
            factory: self.metrics
        ).increment()
    }
}

/// Three order attempts drew tokens that exist already.
struct NHSCollision: Error {}

struct NHSOrderResponse: Encodable {
    var websiteUrlWithQuery: String
    var tokenParameterValue: String
    var testResultPollingToken: String
    var diagnosisKeySubmissionToken: String
}

struct NHSResultResponse: Encodable {
    var testEndDate: NHSTestEndDate
    var testResult: NHSTestResult
    var testKit: NHSTestKit
    var diagnosisKeySubmissionSupported: Bool?
    var requiresConfirmatoryTest: Bool?
}

struct NHSExchangeResponse: Encodable {
    var diagnosisKeySubmissionToken: String
    var testResult: NHSTestResult
    var testEndDate: NHSTestEndDate
    var testKit: NHSTestKit
    var diagnosisKeySubmissionSupported: Bool?
    var requiresConfirmatoryTest: Bool?
}
