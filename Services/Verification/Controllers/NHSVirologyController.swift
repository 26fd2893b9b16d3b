// The NHS test path at verification-service (nhs §3.2–§3.4): test orders, result polls, CTA exchanges, and the
// submission-token check submission-service makes.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics

/// The app routes under `/virology-test` (API key `mobile`, every answer signed) and the internal verification of
/// diagnosis key submission tokens.
struct NHSVirologyController: Sendable {
    let store: any NHSOrderRepository
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
        group.post("nhs/submission-token/redemption") { request, context in
            try await self.submissionTokenRedemption(request, context: context)
        }
    }

    static let internalRoutes: Set<String> = [
        "POST /version/v1/nhs/submission-token/verify", "POST /version/v1/nhs/submission-token/redemption",
    ]

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
                expiresAt: now.addingTimeInterval(NHSOrderLifetime.untilRead)
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

    /// POST /version/v1/nhs/submission-token/verify `{"diagnosisKeySubmissionToken", "submission"?}` → 200
    /// `{"testKit"}` when the token belongs to an unexpired order with a positive result whose keys were not submitted
    /// yet (and marks them submitted by the attempt `submission`: one success per order, also under concurrency), or
    /// whose keys that same attempt submitted (it repeats a call whose answer it lost); 410 with `X-Redeemed-By` when
    /// another attempt submitted them; 404 otherwise; 400 for a bad body.
    func verifySubmissionToken(_ request: Request, context: some RequestContext) async throws -> Response {
        let body = try await NHSJSONObject.read(request, context: context, error: NHSError(.badRequest, "not JSON"))
        guard let token = body.string("diagnosisKeySubmissionToken"), token.utf8.count <= 64 else {
            throw NHSError(.badRequest, "diagnosisKeySubmissionToken is required")
        }
        let submission = try Self.submissionAttempt(body)
        let now = self.clock.now
        let tokenHash = SecretHash.sha256Hex(token.lowercased())
        if let known = try await self.store.redemption(tokenHash: tokenHash), known.submitted {
            return try await self.answerSubmitted(known, attempt: submission, context: context)
        }
        guard
            let order = try await self.store.submittable(tokenHash: tokenHash, now: now),
            let reported = try await self.lookup([order.ctaHash], route: "submission_token", context: context),
            let (_, result, kit) = reported.available, result == .positive
        else {
            self.count("submission_token", "rejected")
            return Response(status: .notFound)
        }
        guard try await self.store.markSubmitted(orderID: order.id, now: now, by: submission) else {
            // A concurrent call submitted the order's keys first.
            guard let known = try await self.store.redemption(tokenHash: tokenHash), known.submitted else {
                self.count("submission_token", "rejected")
                return Response(status: .notFound)
            }
            return try await self.answerSubmitted(known, attempt: submission, context: context)
        }
        self.count("submission_token", "valid")
        return try NHSResponse.json(.ok, ["testKit": kit.rawValue])
    }

    /// The answer for an order whose keys were submitted: 200 `{"testKit"}` again to the attempt that did, 410 with
    /// `X-Redeemed-By` to any other.
    private func answerSubmitted(
        _ known: NHSOrderRedemption,
        attempt: UUID?,
        context: some RequestContext
    ) async throws -> Response {
        if let attempt, known.submittedBy == attempt,
            let kit = try await self.positiveKit(known.order, route: "submission_token", context: context)
        {
            self.count("submission_token", "repeated")
            return try NHSResponse.json(.ok, ["testKit": kit.rawValue])
        }
        self.count("submission_token", "rejected")
        // A caller that names no attempt gets the answer of an unusable token, as before attempts existed.
        guard attempt != nil else { return Response(status: .notFound) }
        var headers = HTTPFields()
        if let by = known.submittedBy { headers[Redemption.redeemedByHeader] = by.uuidString.lowercased() }
        return Response(status: .gone, headers: headers)
    }

    /// POST /version/v1/nhs/submission-token/redemption `{"tokenHash"}` → 200 `{"redeemed", "redeemedBy"?,
    /// "testKit"?}`: whether the keys of the token's order were submitted, by which attempt, and the kit of its
    /// positive result; 404 for a hash no order's token has.
    func submissionTokenRedemption(_ request: Request, context: some RequestContext) async throws -> Response {
        let body = try await NHSJSONObject.read(request, context: context, error: NHSError(.badRequest, "not JSON"))
        guard let hash = body.string("tokenHash"), SecretHash.isSHA256Hex(hash) else {
            throw NHSError(.badRequest, "tokenHash: expected the lower-case hex SHA-256 of a submission token")
        }
        guard let known = try await self.store.redemption(tokenHash: hash) else {
            return Response(status: .notFound)
        }
        let kit = try await self.positiveKit(known.order, route: "submission_token_redemption", context: context)
        return try NHSResponse.json(
            .ok,
            NHSSubmissionRedemption(
                redeemed: known.submitted,
                redeemedBy: known.submittedBy?.uuidString.lowercased(),
                testKit: kit?.rawValue
            )
        )
    }

    /// The test kit of the order's result when it is positive.
    private func positiveKit(
        _ order: NHSOrder,
        route: String,
        context: some RequestContext
    ) async throws -> NHSTestKit? {
        guard let reported = try await self.lookup([order.ctaHash], route: route, context: context),
            let (_, result, kit) = reported.available, result == .positive
        else { return nil }
        return kit
    }

    /// The optional `submission` member: a UUID naming the submission attempt.
    private static func submissionAttempt(_ body: NHSJSONObject) throws -> UUID? {
        guard body.fields["submission"] != nil else { return nil }
        guard let text = body.string("submission"), let id = UUID(uuidString: text) else {
            throw NHSError(.badRequest, "submission: expected a UUID")
        }
        return id
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

/// The answer of the submission-token redemption lookup.
struct NHSSubmissionRedemption: Encodable {
    var redeemed: Bool
    var redeemedBy: String?
    var testKit: String?
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
