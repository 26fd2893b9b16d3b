// The NHS test path at verification-service (nhs §3.2–§3.4): test orders, result polls, CTA exchanges, and the
// submission-token check submission-service makes. The rules are NHSVirologyEngine's; this reads the bodies, writes
// the answers and counts the outcomes.

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
    var engine: NHSVirologyEngine
    /// `NHS_ORDER_WEBSITE` and `NHS_REGISTER_WEBSITE`: where the app sends the person with the CTA token.
    let orderWebsite: String
    let registerWebsite: String
    /// How long every CTA exchange takes, whatever its outcome (the reference's `throttlingResponse`).
    let exchangeDuration: Duration
    let metrics: any MetricsFactory

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
        group.on(Self.verifySubmissionToken) { request, context in
            try await self.verifySubmissionToken(request, context: context)
        }
        group.on(Self.submissionTokenRedemption) { request, context in
            try await self.submissionTokenRedemption(request, context: context)
        }
    }

    static let verifySubmissionToken = InternalRoute(
        .post,
        "/version/v1",
        "nhs/submission-token/verify",
        callers: ["submission-service"]
    )
    static let submissionTokenRedemption = InternalRoute(
        .post,
        "/version/v1",
        "nhs/submission-token/redemption",
        callers: ["submission-service"]
    )
    static let internalRoutes = [Self.verifySubmissionToken, Self.submissionTokenRedemption]

    // MARK: - Order

    /// POST /virology-test/v2/order (and the V1 `home-kit/order`, `home-kit/register`); the body is ignored →
    /// 200 with the CTA token, its website link, the polling token and the submission token.
    func order(website: String, context: some RequestContext) async throws -> Response {
        let order = try await self.reaching("order", context: context) { try await self.engine.order() }
        self.count("order", "created")
        return try NHSResponse.json(
            .ok,
            NHSOrderResponse(
                websiteUrlWithQuery: "\(website)?ctaToken=\(order.cta.value)",
                tokenParameterValue: order.cta.value,
                testResultPollingToken: order.pollingToken,
                diagnosisKeySubmissionToken: order.submissionToken
            )
        )
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
        let poll = try await self.reaching("results", context: context) {
            try await self.engine.poll(
                pollingToken: token,
                v2: v2,
                country: country,
                agent: NHSUserAgent(request.headers[.userAgent])
            )
        }
        switch poll {
        case .unknown:
            self.count("results", "unknown")
            throw NHSError(.notFound, "Test result lookup submitted for unknown testResultPollingToken")
        case .pending:
            self.count("results", "pending")
            return Response(status: .noContent)
        case .hidden:
            self.count("results", "hidden")
            return Response(status: .noContent)
        case .available(let shown):
            self.count("results", "available")
            return try NHSResponse.json(
                .ok,
                NHSResultResponse(
                    testEndDate: shown.date,
                    testResult: shown.result,
                    testKit: shown.kit,
                    diagnosisKeySubmissionSupported: v2 ? shown.policy.diagnosisKeySubmissionSupported : nil,
                    requiresConfirmatoryTest: v2 ? shown.policy.requiresConfirmatoryTest : nil
                )
            )
        }
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
        let exchange = try await self.reaching("cta_exchange", context: context) {
            try await self.engine.exchange(
                cta,
                v2: v2,
                country: country,
                agent: NHSUserAgent(request.headers[.userAgent])
            )
        }
        switch exchange {
        case .unknown:
            self.count("cta_exchange", "unknown")
            throw NHSError(.notFound)
        case .pending:
            self.count("cta_exchange", "pending")
            return Response(status: .noContent)
        case .hidden:
            self.count("cta_exchange", "hidden")
            throw NHSError(.notFound)
        case .exhausted:
            self.count("cta_exchange", "exhausted")
            throw NHSError(.notFound)
        case .exchanged(let shown, let submission):
            self.count("cta_exchange", "exchanged")
            return try NHSResponse.json(
                .ok,
                NHSExchangeResponse(
                    diagnosisKeySubmissionToken: submission,
                    testResult: shown.result,
                    testEndDate: shown.date,
                    testKit: shown.kit,
                    diagnosisKeySubmissionSupported: v2 ? shown.policy.diagnosisKeySubmissionSupported : nil,
                    requiresConfirmatoryTest: v2 ? shown.policy.requiresConfirmatoryTest : nil
                )
            )
        }
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
        let attempt = try Self.submissionAttempt(body)
        let check = try await self.reaching("submission_token", context: context) {
            try await self.engine.checkSubmissionToken(token, attempt: attempt)
        }
        switch check {
        case .valid(let kit):
            self.count("submission_token", "valid")
            return try NHSResponse.json(.ok, ["testKit": kit.rawValue])
        case .repeated(let kit):
            self.count("submission_token", "repeated")
            return try NHSResponse.json(.ok, ["testKit": kit.rawValue])
        case .redeemedElsewhere(let by):
            self.count("submission_token", "rejected")
            var headers = HTTPFields()
            if let by { headers[Redemption.redeemedByHeader] = by.uuidString.lowercased() }
            return Response(status: .gone, headers: headers)
        case .rejected:
            self.count("submission_token", "rejected")
            return Response(status: .notFound)
        }
    }

    /// POST /version/v1/nhs/submission-token/redemption `{"tokenHash"}` → 200 `{"redeemed", "redeemedBy"?,
    /// "testKit"?}`: whether the keys of the token's order were submitted, by which attempt, and the kit of its
    /// positive result; 404 for a hash no order's token has.
    func submissionTokenRedemption(_ request: Request, context: some RequestContext) async throws -> Response {
        let body = try await NHSJSONObject.read(request, context: context, error: NHSError(.badRequest, "not JSON"))
        guard let hash = body.string("tokenHash"), SecretHash.isSHA256Hex(hash) else {
            throw NHSError(.badRequest, "tokenHash: expected the lower-case hex SHA-256 of a submission token")
        }
        guard
            let (known, kit) = try await self.reaching(
                "submission_token_redemption",
                context: context,
                { try await self.engine.redemption(tokenHash: hash) }
            )
        else {
            return Response(status: .notFound)
        }
        return try NHSResponse.json(
            .ok,
            NHSSubmissionRedemption(
                redeemed: known.submitted,
                redeemedBy: known.submittedBy?.uuidString.lowercased(),
                testKit: kit?.rawValue
            )
        )
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

    /// `work`, with test-result-service out of reach answered 503 with `Retry-After` and counted for `route`.
    private func reaching<T>(
        _ route: String,
        context: some RequestContext,
        _ work: () async throws -> T
    ) async throws -> T {
        do {
            return try await work()
        } catch is UpstreamUnavailable {
            self.count(route, "unavailable")
            context.logger.warning("NHS request refused: test-result-service unavailable")
            throw NHSError(
                .serviceUnavailable,
                "test results are unavailable; try again later",
                headers: [.retryAfter: "30"]
            )
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
