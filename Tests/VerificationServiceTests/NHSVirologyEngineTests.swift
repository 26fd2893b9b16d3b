// NHSVirologyEngine on in-memory stores: the outcomes of a submission-token check that the routes turn into 200, 404
// and 410.

import ENCrypto
import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import Testing

@testable import VerificationService

@Suite("NHS virology engine (in memory)")
struct NHSVirologyEngineTests {
    /// The engine on an empty in-memory order store, asking `testResults`.
    static func engine(_ testResults: InMemoryTestResultClient) -> NHSVirologyEngine {
        NHSVirologyEngine(
            store: InMemoryNHSOrderRepository(),
            testResults: testResults,
            pepper: TestNHS.pepper,
            clock: ManualClock().wallClock
        )
    }

    @Test("a submission token: rejected while pending; valid once, then repeated, redeemed elsewhere or unusable")
    func submissionChecks() async throws {
        let testResults = InMemoryTestResultClient()
        let engine = Self.engine(testResults)
        let order = try await engine.order()
        let first = UUID()
        let second = UUID()
        let pending = try await engine.checkSubmissionToken(order.submissionToken, attempt: first)
        await testResults.setNHS(
            NHSResultReport(
                ctaHash: TestNHS.pepper.peppered(order.cta.value),
                status: "available",
                testEndDate: NHSTestEndDate(day: "2026-11-20"),
                testResult: .positive,
                testKit: .rapidResult
            )
        )
        let valid = try await engine.checkSubmissionToken(order.submissionToken, attempt: first)
        let repeated = try await engine.checkSubmissionToken(order.submissionToken.uppercased(), attempt: first)
        let other = try await engine.checkSubmissionToken(order.submissionToken, attempt: second)
        let anonymous = try await engine.checkSubmissionToken(order.submissionToken, attempt: nil)
        let redemption = try #require(
            try await engine.redemption(tokenHash: SecretHash.sha256Hex(order.submissionToken))
        )

        #expect(pending == .rejected)
        #expect(valid == .valid(.rapidResult))
        #expect(repeated == .repeated(.rapidResult))
        #expect(other == .redeemedElsewhere(by: first))
        #expect(anonymous == .rejected)
        #expect(redemption.redemption.submitted && redemption.redemption.submittedBy == first)
        #expect(redemption.kit == .rapidResult)
        #expect(try await engine.redemption(tokenHash: SecretHash.sha256Hex(UUID().uuidString.lowercased())) == nil)
    }

    @Test("test-result-service out of reach surfaces as UpstreamUnavailable, from an order and from a poll")
    func unreachable() async throws {
        let testResults = InMemoryTestResultClient()
        let engine = Self.engine(testResults)
        let order = try await engine.order()
        await testResults.setUnavailable(true)

        await #expect(throws: UpstreamUnavailable.self) { try await engine.order() }
        await #expect(throws: UpstreamUnavailable.self) {
            try await engine.poll(
                pollingToken: order.pollingToken,
                v2: true,
                country: "England",
                agent: NHSUserAgent(nil)
            )
        }
    }
}
