// teleTAN creation: bearer JWT, roles per type, the type header, the global rate limit (cwa-satellites §1.4).

import ENPersistence
import ENTestSupport
import Foundation
import HTTPTypes
import PostgresNIO
import Testing

@testable import TestResultService
@testable import VerificationService

@Suite("teleTAN creation (PostgreSQL)", .postgres(VerificationMigrations.group, TestResultMigrations.group))
struct TeleTANCreationTests {
    private func create(
        _ harness: VerificationHarness,
        token: String?,
        type: String? = nil
    ) async throws -> VerificationHarness.Reply {
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        if let type { headers[InternalController.teleTANTypeHeader] = type }
        return try await harness.post(harness.internal, "/version/v1/tan/teletan", nil, headers: headers)
    }

    @Test("a bearer token creates one teleTAN: the same token again gets 401, a fresh one works")
    func tokenReplay() async throws {
        try await VerificationHarness.run { harness async throws in
            let now = harness.clock.now
            let token = TestJWT.es256(TestJWT.claims(roles: ["c19hotline"], now: now))
            let first = try await self.create(harness, token: token)
            let replayed = try await self.create(harness, token: token)
            let fresh = try await self.create(
                harness,
                token: TestJWT.es256(TestJWT.claims(roles: ["c19hotline"], now: now))
            )

            #expect(first.status == .created)
            #expect(replayed.status == .unauthorized)
            #expect(fresh.status == .created)
            #expect(try await harness.count("tele_tan") == 2)
            #expect(try await harness.count("spent_bearer_token") == 2)
        }
    }

    @Test("valid ES256 and RS256 tokens with the right role create teleTANs of the asked type and lifetime")
    func validTokens() async throws {
        try await VerificationHarness.run { harness async throws in
            let now = harness.clock.now
            let es = try await self.create(
                harness,
                token: TestJWT.es256(TestJWT.claims(roles: ["c19hotline"], now: now))
            )
            let rs = try await self.create(
                harness,
                token: TestJWT.rs256(TestJWT.claims(roles: ["c19healthauthority"], now: now)),
                type: "TEST"
            )
            let event = try await self.create(
                harness,
                token: TestJWT.es256(TestJWT.claims(roles: ["c19hotline_event"], now: now)),
                type: "EVENT"
            )

            #expect(es.status == .created)
            #expect(rs.status == .created)
            #expect(event.status == .created)
            for reply in [es, rs, event] {
                #expect(TeleTAN(validating: try reply.string("value") ?? "") != nil)
            }
            #expect(
                try await harness.count(
                    "tele_tan",
                    where: "type = 'TEST' AND valid_until = created_at + interval '1 hour'"
                ) == 2
            )
            #expect(
                try await harness.count(
                    "tele_tan",
                    where: "type = 'EVENT' AND valid_until = created_at + interval '2 days'"
                ) == 1
            )
        }
    }

    @Test("refused tokens are 401 and create nothing")
    func refusedTokens() async throws {
        try await VerificationHarness.run { harness async throws in
            let now = harness.clock.now
            let hotline = TestJWT.claims(roles: ["c19hotline"], now: now)
            var noExpiry = hotline
            noExpiry["exp"] = nil
            let cases: [(String, String, String?)] = [
                ("wrong key", TestJWT.es256(hotline, key: TestSigningKeys.shared.stranger), nil),
                ("expired", TestJWT.es256(TestJWT.claims(roles: ["c19hotline"], expiresIn: -1, now: now)), nil),
                ("alg none", TestJWT.unsigned(hotline), nil),
                ("HS256 keyed with the public key", TestJWT.hs256WithPublicKey(hotline), nil),
                ("no exp", TestJWT.es256(noExpiry), nil),
                ("missing role", TestJWT.es256(TestJWT.claims(roles: ["offline_access"], now: now)), nil),
                ("event role asks TEST", TestJWT.es256(TestJWT.claims(roles: ["c19hotline_event"], now: now)), "TEST"),
                ("event role, default type", TestJWT.es256(TestJWT.claims(roles: ["c19hotline_event"], now: now)), nil),
                (
                    "hotline asks EVENT",
                    TestJWT.es256(TestJWT.claims(roles: ["c19hotline", "c19healthauthority"], now: now)), "EVENT"
                ),
                ("garbage", "not-a-jwt", nil),
            ]
            for (name, token, type) in cases {
                let reply = try await self.create(harness, token: token, type: type)
                #expect(reply.status == .unauthorized, "\(name): \(reply.status)")
            }
            let basic = try await harness.post(
                harness.internal,
                "/version/v1/tan/teletan",
                nil,
                headers: [.authorization: "Basic dXNlcjpwYXNz"]
            )
            #expect(basic.status == .unauthorized)
            #expect(try await harness.count("tele_tan") == 0)
        }
    }

    @Test("a missing Authorization header or an unknown type is 400")
    func badHeaders() async throws {
        try await VerificationHarness.run { harness async throws in
            let token = TestJWT.es256(
                TestJWT.claims(roles: ["c19hotline", "c19hotline_event"], now: harness.clock.now)
            )

            #expect(try await self.create(harness, token: nil).status == .badRequest)
            #expect(try await self.create(harness, token: token, type: "PCR").status == .badRequest)
            #expect(try await self.create(harness, token: token, type: "test").status == .badRequest)
            #expect(try await harness.count("tele_tan") == 0)
        }
    }

    @Test("the global rate limit: the limit's worth per window, then 429 until the window has passed")
    func rateLimit() async throws {
        try await VerificationHarness.run(["TELETAN_RATE_LIMIT": "3", "TELETAN_RATE_WINDOW": "1h"]) {
            harness async throws in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<4 { statuses.append(try await harness.createTeleTAN(.test).status) }
            harness.clock.advance(by: 1800)
            statuses.append(try await harness.createTeleTAN(.event).status)
            harness.clock.advance(by: 1801)
            statuses.append(try await harness.createTeleTAN(.test).status)

            #expect(statuses == [.created, .created, .created, .tooManyRequests, .tooManyRequests, .created])
            #expect(try await harness.count("tele_tan") == 4)
        }
    }

    @Test("a creation that waits longer than TELETAN_LOCK_TIMEOUT behind the lock answers 503 and stores nothing")
    func busyLock() async throws {
        try await VerificationHarness.run(["TELETAN_LOCK_TIMEOUT": "200ms"]) { harness async throws in
            let database = harness.database
            // Another replica's creation holds the issue lock for as long as this test's request waits: on a
            // connection of its own, outside the pool the service leases from.
            let replica = try await database.configuration.connect(logger: database.logger)
            let whileHeld = try await withCleanup {
                try await replica.withTransaction(logger: database.logger) { connection in
                    try await PostgresVerificationRepository.teleTANIssueLock.lock(
                        connection: connection,
                        logger: database.logger
                    )
                    return try await harness.createTeleTAN(.test)
                }
            } cleanup: {
                try await replica.close()
            }
            let afterwards = try await harness.createTeleTAN(.test)

            #expect(whileHeld.status == .serviceUnavailable, "\(whileHeld.text)")
            #expect(whileHeld.headers[.retryAfter] == "5")
            #expect(afterwards.status == .created)
            #expect(try await harness.count("tele_tan") == 1)
        }
    }

    @Test("the rate limit holds under concurrency: 30 parallel requests with a limit of 10 create 10")
    func rateLimitConcurrent() async throws {
        // A generous lock timeout: on a machine busy with the rest of the suite, 30 serialised creations were seen to
        // take over 40 s rather than the default 2 s, and the later ones would answer 503 instead of 429.
        try await VerificationHarness.run(["TELETAN_RATE_LIMIT": "10", "TELETAN_LOCK_TIMEOUT": "300s"]) {
            harness async throws in
            // One token per request: a token creates one teleTAN at most.
            let now = harness.clock.now
            let replies = try await withThrowingTaskGroup(of: VerificationHarness.Reply.self) { group in
                for _ in 0..<30 {
                    let token = TestJWT.es256(TestJWT.claims(roles: ["c19hotline"], now: now))
                    group.addTask { try await self.create(harness, token: token) }
                }
                return try await group.reduce(into: [VerificationHarness.Reply]()) { $0.append($1) }
            }

            let statuses = replies.map(\.status.code).sorted()
            #expect(replies.filter { $0.status == .created }.count == 10, "\(statuses)")
            #expect(replies.filter { $0.status == .tooManyRequests }.count == 20, "\(statuses)")
        }
    }
}
