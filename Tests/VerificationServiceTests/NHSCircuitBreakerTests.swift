// Circuit-breaker approvals (nhs §7) on PostgreSQL: stored tokens per kind, the officer's switch, the spike rule
// against the 7-day median of the same hour, and an officer's resolution of held requests.

import ENCrypto
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import PostgresNIO
import Testing

@testable import VerificationService

@Suite("NHS circuit breakers at verification-service (PostgreSQL)", .postgres(VerificationMigrations.group))
struct NHSCircuitBreakerTests {
    static let exposure = #"{"matchedKeyCount":2,"daysSinceLastExposure":3,"maximumRiskScore":150.5}"#

    func request(
        _ harness: NHSAppControlHarness,
        _ kind: NHSCircuitBreakerKind,
        _ body: String? = nil
    ) async throws -> (token: String, approval: String) {
        let reply = try await harness.app(.post, "/circuit-breaker/\(kind.rawValue)/request", body ?? Self.exposure)
        #expect(reply.status == .ok)
        return (try #require(try reply.string("approvalToken")), try #require(try reply.string("approval")))
    }

    func resolution(
        _ harness: NHSAppControlHarness,
        _ kind: NHSCircuitBreakerKind,
        _ token: String
    ) async throws
        -> String?
    {
        try await harness.app(.get, "/circuit-breaker/\(kind.rawValue)/resolution/\(token)").string("approval")
    }

    func officer(_ harness: NHSAppControlHarness, _ path: String, _ json: String) async throws -> RouterReply {
        try await harness.internalApp.post(
            "/version/v1/nhs/circuit-breakers/\(path)",
            headers: .json,
            body: ByteBuffer(string: json)
        )
    }

    @Test("a request gets a stored 50-character token; its resolution answers that token's state; unknown tokens 404")
    func tokens() async throws {
        let harness = try NHSAppControlHarness()
        let database = try PostgresTestDatabase.require()
        let (token, approval) = try await self.request(harness, .exposureNotification)
        #expect(approval == "yes")
        #expect(token.count == 50 && token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        #expect(try await self.resolution(harness, .exposureNotification, token) == "yes")
        #expect(
            try await database.count(
                "nhs_circuit_breaker_request",
                where: "token_hash = '\(SecretHash.sha256Hex(token))'"
            ) == 1
        )
        let unknown = try await harness.app(
            .get,
            "/circuit-breaker/exposure-notification/resolution/\(String(repeating: "A", count: 50))"
        )
        #expect(unknown.status == .notFound)
        #expect(
            try await harness.app(.get, "/circuit-breaker/venue/resolution/\(token)").status == .notFound,
            "another kind's token"
        )
        harness.clock.advance(by: 86_401)
        #expect(
            try await harness.app(.get, "/circuit-breaker/exposure-notification/resolution/\(token)").status
                == .notFound,
            "expired"
        )
        #expect(try await harness.runtime.dependencies.circuitBreakers.deleteExpired(now: harness.clock.now) == 1)
    }

    @Test("the venue request stores nothing of its body; an exposure request without its numbers is 422; no key 403")
    func bodies() async throws {
        let harness = try NHSAppControlHarness()
        let database = try PostgresTestDatabase.require()
        let (token, approval) = try await self.request(harness, .venue, #"{"venueId":"4WT59M5Y"}"#)
        #expect(approval == "yes")
        #expect(try await self.resolution(harness, .venue, token) == "yes")
        let dump = try await database.client.query("SELECT row_to_json(r)::text FROM nhs_circuit_breaker_request r")
        for try await row in dump.decode(String.self) { #expect(!row.contains("4WT59M5Y")) }
        #expect(try await self.request(harness, .venue, "").approval == "yes")
        let bad = try await harness.app(
            .post,
            "/circuit-breaker/exposure-notification/request",
            #"{"matchedKeyCount":2}"#
        )
        #expect(bad.status == .unprocessableContent)
        #expect(bad.text == "validation error: Content type is not text/json")
        #expect(try await harness.app(.get, "/circuit-breaker/venue/resolution").status == .unprocessableContent)
        #expect(try await harness.app(.get, "/circuit-breaker/venue/resolution/").status == .unprocessableContent)
        let boolean = #"{"matchedKeyCount":true,"daysSinceLastExposure":3,"maximumRiskScore":1}"#
        #expect(
            try await harness.app(.post, "/circuit-breaker/exposure-notification/request", boolean).status
                == .unprocessableContent
        )
        #expect(try await harness.send(.post, "/circuit-breaker/venue/request", "{}", key: nil).status == .forbidden)
        #expect(
            try await harness.send(.post, "/circuit-breaker/unknown/request", "{}", key: TestNHS.mobile).status
                == .notFound
        )
    }

    @Test(
        "the officer's switch: no refuses, pending holds, and a held request follows the officer's resolution",
        arguments: [false, true]
    )
    func officerSwitch(inMemory: Bool) async throws {
        let harness = try NHSAppControlHarness(inMemory: inMemory)
        #expect(try await self.officer(harness, "switch", #"{"kind":"venue","mode":"no"}"#).status == .ok)
        #expect(try await self.request(harness, .venue, "{}").approval == "no")
        #expect(
            try await self.request(harness, .exposureNotification).approval == "yes",
            "the other kind is unaffected"
        )
        #expect(try await self.officer(harness, "switch", #"{"kind":"venue","mode":"pending"}"#).status == .ok)
        let held = try await self.request(harness, .venue, "{}")
        #expect(held.approval == "pending")
        let text = try await self.officer(harness, "state", "{}").text
        #expect(
            text.contains(#""kind":"venue""#) && text.contains(#""pending":1"#) && text.contains(#""mode":"pending""#)
        )
        #expect(!text.contains(held.token) && !text.contains(SecretHash.sha256Hex(held.token)), "counts, never tokens")
        let resolved = try await self.officer(harness, "resolve", #"{"kind":"venue","approval":"no"}"#)
        #expect(try resolved.json()["resolved"] as? Int == 1)
        #expect(try await self.resolution(harness, .venue, held.token) == "no")
        #expect(try await self.officer(harness, "switch", #"{"kind":"venue","mode":"maybe"}"#).status == .badRequest)
        #expect(
            try await self.officer(harness, "resolve", #"{"kind":"venue","approval":"pending"}"#).status == .badRequest
        )
    }

    @Test(
        "the spike rule holds requests above the threshold until an officer releases them, then stays quiet an hour",
        arguments: [false, true]
    )
    func spikeRule(inMemory: Bool) async throws {
        let harness = try NHSAppControlHarness(
            ["NHS_CB_SPIKE_MINIMUM": "3", "NHS_CB_SPIKE_MULTIPLE": "2"],
            inMemory: inMemory
        )
        for _ in 0..<3 { #expect(try await self.request(harness, .exposureNotification).approval == "yes") }
        let held = try await self.request(harness, .exposureNotification)
        #expect(held.approval == "pending", "the 4th request of the hour exceeds max(2 × median 0, 3)")
        #expect(try await self.resolution(harness, .exposureNotification, held.token) == "pending")
        #expect(try await self.request(harness, .venue, "{}").approval == "yes", "kinds are counted apart")
        let released = try await self.officer(harness, "resolve", #"{"kind":"exposure-notification","approval":"yes"}"#)
        #expect(try released.json()["resolved"] as? Int == 1)
        #expect(try await self.resolution(harness, .exposureNotification, held.token) == "yes")
        #expect(try await self.request(harness, .exposureNotification).approval == "yes", "released: quiet for an hour")
        harness.clock.advance(by: 3601)
        for _ in 0..<3 { #expect(try await self.request(harness, .exposureNotification).approval == "yes") }
        #expect(try await self.request(harness, .exposureNotification).approval == "pending", "the quiet hour is over")

        // A day later at the same hour the median of the same hour is 0 on six days and 5 on one: still 0.
        harness.clock.advance(by: 86_400 - 3601)
        let counts = try await harness.runtime.dependencies.circuitBreakers.counts(
            kind: .exposureNotification,
            now: harness.clock.now
        )
        #expect(counts.sameHour[0] == 5 && counts.sameHour.dropFirst().allSatisfy { $0 == 0 })
    }

    @Test(
        "the median and threshold of the rule",
        arguments: [
            ([0, 0, 0, 0, 0, 0, 0], 0, 100), ([10, 20, 30, 40, 50, 60, 70], 40, 120),
            ([5, 500, 5, 500, 5, 500, 50], 50, 150),
        ]
    )
    func median(counts: [Int], median: Int, threshold: Int) {
        let rule = NHSCircuitBreakerRule(multiple: 3, minimum: 100)
        #expect(NHSCircuitBreakerRule.median(counts) == median)
        #expect(rule.threshold(sameHour: counts) == threshold)
        #expect(rule.decide(mode: .yes, lastHour: threshold, sameHour: counts, quiet: false) == (.yes, false))
        #expect(rule.decide(mode: .yes, lastHour: threshold + 1, sameHour: counts, quiet: false) == (.pending, true))
        #expect(rule.decide(mode: .yes, lastHour: threshold + 1, sameHour: counts, quiet: true) == (.yes, false))
        #expect(rule.decide(mode: .no, lastHour: 0, sameHour: counts, quiet: false) == (.no, false))
    }
}
