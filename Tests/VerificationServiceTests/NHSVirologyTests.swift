// The NHS test path at verification-service (nhs §3.2–§3.4) on PostgreSQL: orders, polls, CTA exchanges and the
// submission-token check, with test-result-service in memory; every answer's signature checked as an app would.

import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PostgresNIO
import Testing

@testable import VerificationService

/// The app router and the internal NHS route (without service-token middleware) over the test database or in memory.
private struct NHSHarness {
    let testResults: InMemoryTestResultClient
    let runtime: VerificationRuntime
    let app: Application<RouterResponder<ServiceRequestContext>>
    let internalApp: Application<RouterResponder<ServiceRequestContext>>

    /// The orders on the test's database, or with `inMemory` in memory.
    init(_ overrides: [String: String] = [:], inMemory: Bool = false) throws {
        let configuration = try VerificationFixture.configuration(TestNHS.settings(overrides))
        self.testResults = InMemoryTestResultClient()
        var dependencies = VerificationDependencies.inMemory(testResults: self.testResults)
        if !inMemory {
            let database = try PostgresTestDatabase.require()
            dependencies.nhsOrders = PostgresNHSOrderRepository(client: database.client, logger: database.logger)
        }
        dependencies.apiKeys = NHSAPIKeyVerifier(store: TestNHS.keyStore())
        var runtime = VerificationRuntime(
            configuration: configuration,
            dependencies: dependencies,
            environment: .testing()
        )
        runtime.nhsExchangeDuration = .milliseconds(1)
        self.runtime = runtime
        self.app = Application(router: try Verification.buildPublicRouter(runtime))
        let internalRouter = Router(context: ServiceRequestContext.self)
        internalRouter.add(middleware: ErrorMiddleware())
        try #require(runtime.nhsController).addInternalRoutes(to: internalRouter.group("version/v1"))
        self.internalApp = Application(router: internalRouter)
    }

    static func headers(
        requestID: String = "req-1",
        userAgent: String? = nil,
        key: NHSAPIKeyCredential? = TestNHS.mobile
    )
        -> HTTPFields
    {
        var headers: HTTPFields = [.contentType: "application/json", .nhsRequestID: requestID]
        if let key { headers[.authorization] = key.authorization }
        if let userAgent { headers[.userAgent] = userAgent }
        return headers
    }

    /// A signed call; the signature must verify for `requestID`, the method and `path`.
    func call(
        _ path: String,
        _ json: String,
        requestID: String = "req-1",
        userAgent: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> RouterReply {
        let reply = try await self.app.post(
            path,
            headers: Self.headers(requestID: requestID, userAgent: userAgent),
            body: ByteBuffer(string: json)
        )
        #expect(
            throws: Never.self,
            "the answer (\(reply.status.code)) is signed for its request",
            sourceLocation: sourceLocation
        ) {
            try TestNHS.verifier.verifyAnswer(
                signature: reply.headers[.amzMetaSignature],
                date: reply.headers[.amzMetaSignatureDate],
                requestID: requestID,
                method: "POST",
                path: path,
                body: reply.body.readableBytesView
            )
        }
        return reply
    }

    /// The lab's result for the CTA token `cta`, as test-result-service would report it.
    func setResult(_ cta: String, _ result: NHSTestResult, kit: NHSTestKit = .labResult) async {
        await self.testResults.setNHS(
            NHSResultReport(
                ctaHash: TestNHS.pepper.peppered(cta),
                status: "available",
                testEndDate: NHSTestEndDate(day: "2026-11-20"),
                testResult: result,
                testKit: kit
            )
        )
    }

    /// `count` parallel verifications of a submission token; their statuses.
    func verify(_ token: String, times count: Int = 1) async throws -> [HTTPResponse.Status] {
        try await self.internalApp.post(
            "/version/v1/nhs/submission-token/verify",
            headers: .json,
            body: ByteBuffer(string: #"{"diagnosisKeySubmissionToken":"\#(token)"}"#),
            times: count
        ).map(\.status)
    }
}

@Suite("NHS test path at verification-service (PostgreSQL)", .postgres(VerificationMigrations.group))
struct NHSVirologyTests {
    @Test(
        "order → pending → the lab's positive result → V2 and V1 polls → the submission token verifies once, in parallel",
        arguments: [false, true]
    )
    func orderJourney(inMemory: Bool) async throws {
        let harness = try NHSHarness(inMemory: inMemory)
        let order = try await harness.call("/virology-test/v2/order", "{}")
        #expect(order.status == .ok)
        let cta = try #require(try order.string("tokenParameterValue"))
        #expect(CTAToken(cta) != nil)
        #expect(try order.string("websiteUrlWithQuery")?.hasSuffix("?ctaToken=\(cta)") == true)
        let polling = try #require(try order.string("testResultPollingToken"))
        let submission = try #require(try order.string("diagnosisKeySubmissionToken"))
        #expect(UUID(uuidString: polling) != nil && UUID(uuidString: submission) != nil)
        let poll = #"{"testResultPollingToken":"\#(polling)","country":"England"}"#

        #expect(try await harness.call("/virology-test/v2/results", poll).status == .noContent)
        #expect(try await harness.verify(submission) == [.notFound], "no result yet: the token is not usable")

        await harness.setResult(cta, .positive)
        let result = try await harness.call("/virology-test/v2/results", poll, requestID: "poll-2")
        #expect(result.status == .ok)
        let fields = try result.json()
        #expect(fields["testResult"] as? String == "POSITIVE")
        #expect(fields["testKit"] as? String == "LAB_RESULT")
        #expect(fields["testEndDate"] as? String == "2026-11-20T00:00:00Z")
        #expect(fields["diagnosisKeySubmissionSupported"] as? Bool == true)
        #expect(fields["requiresConfirmatoryTest"] as? Bool == false)
        let v1 = try await harness.call("/virology-test/results", #"{"testResultPollingToken":"\#(polling)"}"#)
        #expect(v1.status == .ok)
        #expect(try v1.json()["diagnosisKeySubmissionSupported"] == nil)
        #expect(try v1.string("testKit") == "LAB_RESULT")

        let statuses = try await harness.verify(submission.uppercased(), times: 20)
        #expect(statuses.filter { $0 == .ok }.count == 1)
        #expect(statuses.filter { $0 == .notFound }.count == 19)
        #expect(try await harness.verify(submission) == [.notFound])
    }

    /// POSTs `body` to an internal NHS route.
    private func internalPost(_ harness: NHSHarness, _ path: String, _ body: String) async throws -> RouterReply {
        try await harness.internalApp.post(path, headers: .json, body: ByteBuffer(string: body))
    }

    @Test(
        "a submission token spent by a named attempt: that attempt 200 again with the kit, another 410 naming it, the lookup tells",
        arguments: [false, true]
    )
    func namedSubmissionAttempts(inMemory: Bool) async throws {
        let harness = try NHSHarness(inMemory: inMemory)
        let ordered = try await harness.call("/virology-test/v2/order", "{}")
        let cta = try #require(try ordered.string("tokenParameterValue"))
        let submission = try #require(try ordered.string("diagnosisKeySubmissionToken"))
        let polling = try #require(try ordered.string("testResultPollingToken"))
        await harness.setResult(cta, .positive)
        let polled = try await harness.call(
            "/virology-test/v2/results",
            #"{"testResultPollingToken":"\#(polling)","country":"England"}"#
        )
        #expect(polled.status == .ok)
        let attempt = UUID().uuidString.lowercased()
        let verify = { (id: String) in #"{"diagnosisKeySubmissionToken":"\#(submission)","submission":"\#(id)"}"# }
        let lookup = #"{"tokenHash":"\#(SecretHash.sha256Hex(submission.lowercased()))"}"#
        let verifyPath = "/version/v1/nhs/submission-token/verify"
        let lookupPath = "/version/v1/nhs/submission-token/redemption"

        let before = try await self.internalPost(harness, lookupPath, lookup)
        let first = try await self.internalPost(harness, verifyPath, verify(attempt))
        let repeated = try await self.internalPost(harness, verifyPath, verify(attempt))
        let other = try await self.internalPost(harness, verifyPath, verify(UUID().uuidString))
        let after = try await self.internalPost(harness, lookupPath, lookup)
        let unknown = try await self.internalPost(
            harness,
            lookupPath,
            #"{"tokenHash":"\#(SecretHash.sha256Hex(UUID().uuidString))"}"#
        )

        #expect(before.status == .ok)
        #expect(try before.json()["redeemed"] as? Bool == false)
        #expect(try before.string("testKit") == "LAB_RESULT")
        #expect(first.status == .ok)
        #expect(repeated.status == .ok)
        #expect(try repeated.string("testKit") == "LAB_RESULT")
        #expect(other.status == .gone)
        #expect(other.headers[Redemption.redeemedByHeader] == attempt)
        #expect(try await harness.verify(submission) == [.notFound], "a caller that names no attempt: 404 as before")
        #expect(try after.json()["redeemed"] as? Bool == true)
        #expect(try after.string("redeemedBy") == attempt)
        #expect(unknown.status == .notFound)
    }

    @Test(
        "refusals: unknown token 404 (signed, text), no country 422, a bad body 422, no or a wrong API key 403 unsigned"
    )
    func refusals() async throws {
        let harness = try NHSHarness()
        let unknown = try await harness.call(
            "/virology-test/v2/results",
            #"{"testResultPollingToken":"\#(UUID().uuidString)","country":"England"}"#
        )
        #expect(unknown.status == .notFound)
        #expect(unknown.text == "Test result lookup submitted for unknown testResultPollingToken")
        let noCountry = try await harness.call("/virology-test/v2/results", #"{"testResultPollingToken":"x"}"#)
        #expect(noCountry.status == .unprocessableContent)
        #expect(noCountry.text.hasPrefix("validation error:"))
        #expect(try await harness.call("/virology-test/v2/results", "not json").status == .unprocessableContent)
        for key in [nil, NHSAPIKeyCredential(keyName: "app-test", secret: "wrong-secret-entirely"), TestNHS.lab] {
            let refused = try await harness.app.post(
                "/virology-test/v2/order",
                headers: NHSHarness.headers(key: key),
                body: ByteBuffer(string: "{}")
            )
            #expect(refused.status == .forbidden)
            #expect(refused.headers[.amzMetaSignature] == nil)
        }
    }

    @Test(
        "CTA exchange of a token-API result: hidden from apps up to 4.3 when a confirmatory test is required, twice at most, each time a new token",
        arguments: [false, true]
    )
    func exchange(inMemory: Bool) async throws {
        let harness = try NHSHarness(inMemory: inMemory)
        let cta = CTAToken.random().value
        let body = #"{"ctaToken":"\#(cta)","country":"England"}"#
        #expect(try await harness.call("/virology-test/v2/cta-exchange", body).status == .notFound, "no result")
        await harness.testResults.setNHS(NHSResultReport(ctaHash: TestNHS.pepper.peppered(cta), status: "pending"))
        #expect(try await harness.call("/virology-test/v2/cta-exchange", body).status == .noContent)
        await harness.setResult(cta, .positive, kit: .rapidSelfReported)
        let old = "p=iOS,o=14.2,v=4.3,b=1"
        #expect(try await harness.call("/virology-test/v2/cta-exchange", body, userAgent: old).status == .notFound)
        #expect(
            try await harness.call("/virology-test/cta-exchange", #"{"ctaToken":"\#(cta)"}"#).status == .notFound,
            "V1 knows no self-reported rapid tests"
        )

        let first = try await harness.call("/virology-test/v2/cta-exchange", body, userAgent: "p=iOS,o=14.2,v=4.4,b=1")
        #expect(first.status == .ok)
        #expect(try first.json()["diagnosisKeySubmissionSupported"] as? Bool == false)
        #expect(try first.json()["requiresConfirmatoryTest"] as? Bool == true)
        let second = try await harness.call("/virology-test/v2/cta-exchange", body)
        #expect(second.status == .ok)
        let tokens = [
            try first.string("diagnosisKeySubmissionToken"), try second.string("diagnosisKeySubmissionToken"),
        ]
        #expect(Set(tokens.compactMap { $0 }).count == 2)
        #expect(try await harness.call("/virology-test/v2/cta-exchange", body).status == .notFound, "a third time")

        // One submission per result, whichever token is used.
        #expect(try await harness.verify(try #require(tokens[1])) == [.ok])
        #expect(try await harness.verify(try #require(tokens[0])) == [.notFound])
    }

    @Test("a CTA token failing its check character is 400; a negative result's token never verifies")
    func badTokensAndNegatives() async throws {
        let harness = try NHSHarness()
        for token in ["1234abcd", "invalid-cta-token", "CC8F0B6Z"] {
            let reply = try await harness.call(
                "/virology-test/v2/cta-exchange",
                #"{"ctaToken":"\#(token)","country":"England"}"#
            )
            #expect(reply.status == .badRequest, "\(token)")
        }
        let cta = CTAToken.random().value
        await harness.setResult(cta, .negative)
        let exchanged = try await harness.call(
            "/virology-test/v2/cta-exchange",
            #"{"ctaToken":"\#(cta)","country":"Wales"}"#
        )
        #expect(exchanged.status == .ok)
        #expect(try exchanged.json()["diagnosisKeySubmissionSupported"] as? Bool == false)
        #expect(
            try await harness.verify(try #require(try exchanged.string("diagnosisKeySubmissionToken"))) == [.notFound]
        )
    }

    @Test("expiry is checked on every read: an expired order's poll is 404 and its token does not verify")
    func expiry() async throws {
        let harness = try NHSHarness()
        let database = try PostgresTestDatabase.require()
        let order = try await harness.call("/virology-test/v2/order", "{}")
        let cta = try #require(try order.string("tokenParameterValue"))
        let polling = try #require(try order.string("testResultPollingToken"))
        await harness.setResult(cta, .positive)
        try await database.client.query(
            "UPDATE nhs_virology_order SET expires_at = now() - interval '1 second', submission_expires_at = now() - interval '1 second'"
        )
        let poll = #"{"testResultPollingToken":"\#(polling)","country":"England"}"#
        #expect(try await harness.call("/virology-test/v2/results", poll).status == .notFound)
        #expect(try await harness.verify(try #require(try order.string("diagnosisKeySubmissionToken"))) == [.notFound])
        let store = PostgresNHSOrderRepository(client: database.client, logger: database.logger)
        #expect(try await store.deleteExpired(now: Date()) == 0, "kept while test-result may still hold the result")
        let exchange = #"{"ctaToken":"\#(cta)","country":"England"}"#
        #expect(
            try await harness.call("/virology-test/v2/cta-exchange", exchange).status == .notFound,
            "the expired order refuses a new exchange"
        )
        #expect(try await store.deleteExpired(now: Date().addingTimeInterval(29 * 86_400)) == 1)
        #expect(try await database.count("nhs_submission_token") == 0)
    }

    @Test("tokens are stored as hashes only; maintenance mode answers 503 to everything")
    func storageAndMaintenance() async throws {
        let harness = try NHSHarness()
        let database = try PostgresTestDatabase.require()
        let order = try await harness.call("/virology-test/v2/order", "{}")
        let cta = try #require(try order.string("tokenParameterValue"))
        let polling = try #require(try order.string("testResultPollingToken"))
        #expect(
            try await database.count("nhs_virology_order", where: "cta_hash = '\(TestNHS.pepper.peppered(cta))'") == 1
        )
        #expect(
            try await database.count(
                "nhs_virology_order",
                where: "polling_token_hash = '\(SecretHash.sha256Hex(polling))'"
            ) == 1
        )

        let maintenance = try NHSHarness(["NHS_MAINTENANCE_MODE": "true"])
        let reply = try await maintenance.app.post(
            "/virology-test/v2/order",
            headers: NHSHarness.headers(),
            body: ByteBuffer(string: "{}")
        )
        #expect(reply.status == .serviceUnavailable)
    }

    @Test("an order whose CTA token exists draws another; after three collisions it fails (500) and stores nothing")
    func collisions() async throws {
        let harness = try NHSHarness()
        let database = try PostgresTestDatabase.require()
        let taken = CTAToken.random()
        let fresh = CTAToken.random()
        let queue = Mutexed([taken, taken, fresh, taken, taken, taken])
        var controller = try #require(harness.runtime.nhsController)
        controller.engine.newCTAToken = { queue.withLock { $0.removeFirst() } }
        let router = Router(context: ServiceRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        controller.addRoutes(to: router.group("virology-test"))
        let app = Application(router: router)

        #expect(try await app.post("/virology-test/v2/order", headers: .json, body: nil).status == .ok)
        let second = try await app.post("/virology-test/v2/order", headers: .json, body: nil)
        #expect(second.status == .ok)
        #expect(try second.string("tokenParameterValue") == fresh.value, "drawn again after one collision")
        let third = try await app.post("/virology-test/v2/order", headers: .json, body: nil)
        #expect(third.status == .internalServerError)
        #expect(try await database.count("nhs_virology_order") == 2)
    }

    @Test(
        "a V2 app up to 4.3 polling a result that needs a confirmatory test gets 204 (pending), a newer one the result"
    )
    func oldAppPoll() async throws {
        let harness = try NHSHarness()
        let order = try await harness.call("/virology-test/v2/order", "{}")
        let cta = try #require(try order.string("tokenParameterValue"))
        let polling = try #require(try order.string("testResultPollingToken"))
        await harness.setResult(cta, .positive, kit: .rapidSelfReported)
        let poll = #"{"testResultPollingToken":"\#(polling)","country":"England"}"#
        let old = try await harness.call("/virology-test/v2/results", poll, userAgent: "p=Android,o=29,v=4.3.1,b=1")
        #expect(old.status == .noContent)
        let v1 = try await harness.call("/virology-test/results", #"{"testResultPollingToken":"\#(polling)"}"#)
        #expect(v1.status == .noContent, "V1 knows no self-reported rapid tests")
        let current = try await harness.call("/virology-test/v2/results", poll, userAgent: "p=Android,o=29,v=4.4,b=1")
        #expect(current.status == .ok)
        #expect(try current.json()["requiresConfirmatoryTest"] as? Bool == true)
    }
}
