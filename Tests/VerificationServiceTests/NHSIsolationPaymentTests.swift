// Isolation payment tokens (nhs §8) on PostgreSQL: the app's create and update (signed), the website's verify and
// consume (its own API key, not signed), the state machine, the allowlist, the switch, and consumption under
// concurrency.

import ENCrypto
import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import VerificationService

@Suite("NHS isolation payment tokens at verification-service (PostgreSQL)", .postgres(VerificationMigrations.group))
struct NHSIsolationPaymentTests {
    static let create = "/isolation-payment/ipc-token/create"
    static let update = "/isolation-payment/ipc-token/update"
    static let verify = "/isolation-payment/ipc-token/verify-token"
    static let consume = "/isolation-payment/ipc-token/consume-token"

    func update(_ harness: NHSAppControlHarness, _ token: String, days: Double = 10) async throws -> RouterReply {
        let now = harness.clock.now
        let encounter = NHSInstant.text(now.addingTimeInterval(-2 * 86_400))
        let end = NHSInstant.text(now.addingTimeInterval(days * 86_400))
        return try await harness.app(
            .post,
            Self.update,
            #"{"ipcToken":"\#(token)","riskyEncounterDate":"\#(encounter)","isolationPeriodEndDate":"\#(end)"}"#
        )
    }

    func website(_ harness: NHSAppControlHarness, _ path: String, _ token: String) async throws -> RouterReply {
        try await harness.send(
            .post,
            path,
            #"{"contractVersion":1,"ipcToken":"\#(token)"}"#,
            key: TestNHS.paymentWebsite
        )
    }

    @Test("create → verify refuses (not unlocked) → update → verify shows the dates → consume once → then invalid")
    func journey() async throws {
        let harness = try NHSAppControlHarness(["NHS_IPC_WEBSITE": "https://claim.example/start"])
        let database = try PostgresTestDatabase.require()
        let created = try await harness.app(.post, Self.create, #"{"country":"England"}"#)
        #expect(created.status == .created)
        #expect(try created.json()["isEnabled"] as? Bool == true)
        let token = try #require(try created.string("ipcToken"))
        #expect(token.count == 64 && token.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(
            try await database.count(
                "nhs_isolation_payment_token",
                where: "token_hash = '\(SecretHash.sha256Hex(token))'"
            ) == 1
        )
        #expect(try await database.count("nhs_isolation_payment_token", where: "token_hash = '\(token)'") == 0)

        let early = try await self.website(harness, Self.verify, token)
        #expect(early.status == .unprocessableContent)
        #expect(try early.string("state") == "invalid")
        #expect(early.headers[.amzMetaSignature] == nil, "the website's routes are not signed")

        let fractional =
            #"{"ipcToken":"\#(token)","riskyEncounterDate":"2020-01-01T00:00:00.123Z","isolationPeriodEndDate":"x"}"#
        #expect(try await harness.app(.post, Self.update, fractional).status == .badRequest, "a bad end date")
        let updated = try await self.update(harness, token)
        #expect(updated.status == .ok)
        #expect(try updated.string("websiteUrlWithQuery") == "https://claim.example/start?ipcToken=\(token)")

        let verified = try await self.website(harness, Self.verify, token)
        #expect(verified.status == .ok)
        let fields = try verified.json()
        #expect(fields["state"] as? String == "valid")
        #expect(fields["contractVersion"] as? Int == 1)
        #expect(fields["ipcToken"] as? String == token)
        #expect((fields["riskyEncounterDate"] as? String)?.hasSuffix("Z") == true)
        #expect(fields["isolationPeriodEndDate"] != nil && fields["createdTimestamp"] != nil)
        #expect(fields["updatedTimestamp"] != nil)

        let second = try await self.update(harness, token, days: 5)
        #expect(second.status == .ok, "an update of a valid token changes nothing but answers alike")
        #expect(
            try await self.website(harness, Self.verify, token).json()["isolationPeriodEndDate"] as? String
                == fields["isolationPeriodEndDate"] as? String
        )

        let consumed = try await self.website(harness, Self.consume, token)
        #expect(consumed.status == .ok)
        #expect(try consumed.string("state") == "consumed")
        #expect(try await self.website(harness, Self.consume, token).status == .unprocessableContent)
        #expect(try await self.website(harness, Self.verify, token).status == .unprocessableContent)
        #expect(try await database.count("nhs_isolation_payment_token") == 0)
    }

    @Test("instants with and without fractional seconds are read; others are not")
    func instants() {
        #expect(NHSInstant.parse("2026-11-24T10:00:00Z") != nil)
        #expect(NHSInstant.parse("2026-11-24T10:00:00.123Z") != nil)
        #expect(NHSInstant.parse("2026-11-24 10:00:00") == nil)
        #expect(NHSInstant.parse("yesterday") == nil)
    }

    @Test(
        "one of 50 parallel consumptions of a token succeeds, the others are invalid (422)",
        arguments: [false, true]
    )
    func consumeOnce(inMemory: Bool) async throws {
        let harness = try NHSAppControlHarness(inMemory: inMemory)
        let token = try #require(try await harness.app(.post, Self.create, #"{"country":"Wales"}"#).string("ipcToken"))
        #expect(try await self.update(harness, token).status == .ok)
        let statuses = try await harness.app.post(
            Self.consume,
            headers: [.contentType: "application/json", .authorization: TestNHS.paymentWebsite.authorization],
            body: .init(string: #"{"contractVersion":1,"ipcToken":"\#(token)"}"#),
            times: 50
        ).map(\.status)
        #expect(statuses.filter { $0 == .ok }.count == 1)
        #expect(statuses.filter { $0 == .unprocessableContent }.count == 49)
    }

    @Test("a country off the allowlist gets isEnabled false and no token; an unknown token's update answers the URL")
    func allowlistAndUnknown() async throws {
        let harness = try NHSAppControlHarness(["NHS_IPC_COUNTRIES": "England"])
        let database = try PostgresTestDatabase.require()
        let refused = try await harness.app(.post, Self.create, #"{"country":"Wales"}"#)
        #expect(refused.status == .created)
        #expect(refused.text == #"{"isEnabled":false}"#)
        #expect(try await database.count("nhs_isolation_payment_token") == 0)
        let unknown = String(repeating: "a", count: 64)
        let updated = try await self.update(harness, unknown)
        #expect(updated.status == .ok)
        #expect(try updated.string("websiteUrlWithQuery")?.hasSuffix("?ipcToken=\(unknown)") == true)
        #expect(try await database.count("nhs_isolation_payment_token") == 0)
        #expect(try await self.website(harness, Self.verify, unknown).status == .unprocessableContent)
    }

    @Test(
        "bad bodies 400, creation off 503, wrong or missing keys 403 on both sides, expired tokens invalid",
        arguments: [false, true]
    )
    func refusals(inMemory: Bool) async throws {
        let harness = try NHSAppControlHarness(inMemory: inMemory)
        #expect(try await harness.app(.post, Self.create, "not json").status == .badRequest)
        #expect(try await harness.app(.post, Self.create, #"{"country":""}"#).status == .badRequest)
        #expect(try await harness.app(.post, Self.update, #"{"ipcToken":"short"}"#).status == .badRequest)
        let token = try #require(
            try await harness.app(.post, Self.create, #"{"country":"England"}"#).string("ipcToken")
        )
        let now = harness.clock.now
        let backwards =
            #"{"ipcToken":"\#(token)","riskyEncounterDate":"\#(NHSInstant.text(now))","#
            + #""isolationPeriodEndDate":"\#(NHSInstant.text(now.addingTimeInterval(-86_400)))"}"#
        #expect(try await harness.app(.post, Self.update, backwards).status == .badRequest)
        #expect(try await self.update(harness, token, days: -1).status == .badRequest, "an isolation that has ended")
        #expect(try await self.update(harness, token, days: 40).status == .badRequest, "an isolation beyond 28 days")
        let end = NHSInstant.text(now.addingTimeInterval(5 * 86_400))
        // Impossible times whose roll-over would land inside the window (yesterday 24:00 is today 00:00), an
        // encounter in year 1, and one a day too long ago.
        let yesterday = String(NHSInstant.text(now.addingTimeInterval(-86_400)).prefix(10))
        let twoDaysAgo = String(NHSInstant.text(now.addingTimeInterval(-2 * 86_400)).prefix(10))
        for encounter in [
            yesterday + "T24:00:00Z", twoDaysAgo + "T13:60:00Z", twoDaysAgo + "T10:00:60Z",
            "0001-01-01T00:00:00Z", NHSInstant.text(now.addingTimeInterval(-29 * 86_400)),
        ] {
            let body =
                #"{"ipcToken":"\#(token)","riskyEncounterDate":"\#(encounter)","isolationPeriodEndDate":"\#(end)"}"#
            #expect(try await harness.app(.post, Self.update, body).status == .badRequest, "encounter \(encounter)")
        }
        #expect(
            try await harness.app(
                .post,
                Self.update,
                #"{"ipcToken":"\#(token)","riskyEncounterDate":"yesterday","isolationPeriodEndDate":"x"}"#
            ).status == .badRequest
        )
        #expect(try await self.website(harness, Self.verify, "../etc").status == .badRequest)

        #expect(try await harness.send(.post, Self.verify, "{}", key: TestNHS.mobile).status == .forbidden)
        #expect(try await harness.send(.post, Self.create, "{}", key: TestNHS.paymentWebsite).status == .forbidden)
        #expect(try await harness.send(.post, Self.consume, "{}", key: nil).status == .forbidden)

        harness.clock.advance(by: 15 * 86_400)
        #expect(try await self.update(harness, token).status == .ok)
        #expect(try await self.website(harness, Self.verify, token).status == .unprocessableContent, "expired unused")
        #expect(try await harness.runtime.dependencies.isolationPayments.deleteExpired(now: harness.clock.now) == 1)

        let off = try NHSAppControlHarness(["NHS_IPC_TOKEN_CREATION_ENABLED": "false"])
        #expect(try await off.app(.post, Self.create, #"{"country":"England"}"#).status == .serviceUnavailable)
        #expect(try await self.update(off, token).status == .serviceUnavailable)
    }
}
