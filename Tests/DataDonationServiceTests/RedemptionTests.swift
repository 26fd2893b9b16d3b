// OTP redemption on the internal port (cwa-satellites §4.1), fake self-reports, retention and the analysts' role.

import ENCrypto
import ENModels
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PostgresNIO
import Testing

@testable import DataDonationService

@Suite("OTP redemption, fake requests, retention", .postgres(DataDonationMigrations.group))
struct RedemptionTests {
    @Test("valid, then redeemed; an expired OTP; an unknown one; self-report answers 200 with the state")
    func stateTransitions() async throws {
        let world = try DonationWorld()
        let clock = ManualClock(Date())
        try await world.withService(clock: clock.wallClock) { service in
            let otp = UUID().uuidString.lowercased()
            let created = try await service.post(
                "android/srs",
                try world.androidSelfReport(otp: otp),
                headers: DonationService.real
            )
            #expect(created.status == .ok)
            let first = try await service.redeem("srs", otp)
            #expect(first.status == .ok)
            #expect(try first.string("state") == "valid")
            #expect(try first.json()["strongClientIntegrityCheck"] as? Bool == true)
            let second = try await service.redeem("srs", otp)
            #expect(second.status == .ok)
            #expect(try second.string("state") == "redeemed")

            // A survey OTP of a weak device, redeemed after its hour.
            var message = EDUSOneTimePasswordRequestAndroid()
            let survey = UUID().uuidString.lowercased()
            message.payload.otp = survey
            message.authentication = try world.android(message.payload, .safetyNet { $0["basicIntegrity"] = false })
            #expect(try await service.post("android/otp", try message.buffer()).status == .ok)
            clock.advance(by: 3601)
            let late = try await service.redeem("otp", survey)
            #expect(late.status == .badRequest)
            #expect(try late.string("state") == "expired")
            #expect(try late.json()["strongClientIntegrityCheck"] as? Bool == false)

            // Kinds do not mix: a self-report OTP is unknown to the error-log route.
            #expect(try await service.redeem("els", otp).status == .notFound)
            #expect(try await service.redeem("srs", UUID().uuidString.lowercased()).status == .notFound)
            // Not a version 3/4 UUID.
            #expect(try await service.redeem("srs", "00000000-0000-0000-0000-000000000000").status == .badRequest)
        }
    }

    @Test(
        "a self-report OTP redeemed by a named attempt: that attempt valid again, another 410 naming it, the lookup tells"
    )
    func namedSubmissionAttempts() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let otp = UUID().uuidString.lowercased()
            let created = try await service.post(
                "android/srs",
                try world.androidSelfReport(otp: otp),
                headers: DonationService.real
            )
            #expect(created.status == .ok)
            let attempt = UUID().uuidString.lowercased()
            let lookup = #"{"otpHash":"\#(SecretHash.sha256Hex(otp))"}"#

            let before = try await service.internalPost("/version/v1/srs/redemption", lookup)
            let first = try await service.redeem("srs", otp, submission: attempt)
            let repeated = try await service.redeem("srs", otp, submission: attempt)
            let other = try await service.redeem("srs", otp, submission: UUID().uuidString)
            let unnamed = try await service.redeem("srs", otp)
            let after = try await service.internalPost("/version/v1/srs/redemption", lookup)
            let unknown = try await service.internalPost(
                "/version/v1/srs/redemption",
                #"{"otpHash":"\#(SecretHash.sha256Hex(UUID().uuidString.lowercased()))"}"#
            )
            let malformed = try await service.redeem("srs", otp, submission: "not a uuid")

            #expect(before.status == .ok)
            #expect(try before.string("state") == "valid")
            #expect(try first.string("state") == "valid")
            #expect(repeated.status == .ok)
            #expect(try repeated.string("state") == "valid")
            #expect(other.status == .gone)
            #expect(try other.string("state") == "redeemed")
            #expect(other.headers[Redemption.redeemedByHeader] == attempt)
            #expect(unnamed.status == .ok, "a caller that names no attempt gets the reference's answer")
            #expect(try unnamed.string("state") == "redeemed")
            #expect(try after.string("state") == "redeemed")
            #expect(try after.string("redeemedBy") == attempt)
            #expect(unknown.status == .notFound)
            #expect(malformed.status == .badRequest)
        }
    }

    @Test("50 parallel redemptions of one OTP: exactly one is valid")
    func parallelRedemption() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let otp = UUID().uuidString.lowercased()
            #expect(
                try await service.post(
                    "android/srs",
                    try world.androidSelfReport(otp: otp),
                    headers: DonationService.real
                )
                .status == .ok
            )
            var headers = TestServiceKeys.header("submission-service", for: "data-donation-service")
            headers[.contentType] = "application/json"
            let replies = try await service.internalApp.post(
                "/version/v1/srs",
                headers: headers,
                body: ByteBuffer(string: #"{"otp":"\#(otp)"}"#),
                times: 50
            )
            let states = try replies.map { try $0.string("state") }
            #expect(states.filter { $0 == "valid" }.count == 1)
            #expect(states.filter { $0 == "redeemed" }.count == 49)
        }
    }

    @Test(
        "parallel redemptions of one OTP by named attempts: each call of the winner valid, every other 410 naming the winner"
    )
    func parallelNamedRedemption() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let otp = UUID().uuidString.lowercased()
            #expect(
                try await service.post(
                    "android/srs",
                    try world.androidSelfReport(otp: otp),
                    headers: DonationService.real
                )
                .status == .ok
            )
            // Ten attempts, each calling five times at once (a repeat after a lost answer races its first call).
            let attempts = (0..<10).map { _ in UUID().uuidString.lowercased() }
            let replies = try await withThrowingTaskGroup(of: (String, RouterReply).self) { group in
                for attempt in attempts {
                    for _ in 0..<5 {
                        group.addTask { (attempt, try await service.redeem("srs", otp, submission: attempt)) }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let winners = Set(replies.filter { $0.1.status == .ok }.map(\.0))
            #expect(winners.count == 1, "one attempt redeemed it")
            let winner = try #require(winners.first)
            for (attempt, reply) in replies where attempt == winner {
                #expect(reply.status == .ok)
                #expect(try reply.string("state") == "valid")
            }
            for (attempt, reply) in replies where attempt != winner {
                #expect(reply.status == .gone)
                #expect(reply.headers[Redemption.redeemedByHeader] == winner, "never a redemption without its attempt")
            }
        }
    }

    @Test(
        "redemptions waiting on a concurrent one: its own attempt's call is valid, another's 410 names it (read after the commit)"
    )
    func redemptionsBehindAConcurrentOne() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let otp = UUID().uuidString.lowercased()
            #expect(
                try await service.post(
                    "android/srs",
                    try world.androidSelfReport(otp: otp),
                    headers: DonationService.real
                )
                .status == .ok
            )
            let winner = UUID()
            let database = service.database
            let hash = SecretHash.sha256Hex(otp)
            // The winner's redemption, its commit held back until both calls below wait for its row.
            let (own, other) = try await database.client.withTransaction(logger: database.logger) { connection in
                try await connection.query(
                    "UPDATE one_time_password SET redeemed_at = now(), redeemed_by = \(winner) WHERE otp_hash = \(hash)",
                    logger: database.logger
                )
                let own = Task { try await service.redeem("srs", otp, submission: winner.uuidString.lowercased()) }
                let other = Task { try await service.redeem("srs", otp, submission: UUID().uuidString.lowercased()) }
                let waiting = try await Poll.until {
                    let rows = try await database.client.query(
                        "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                        logger: database.logger
                    )
                    for try await count in rows.decode(Int.self) { return count == 2 }
                    return false
                }
                #expect(waiting, "both calls wait for the row")
                return (own, other)
            }
            let ownReply = try await own.value
            let otherReply = try await other.value
            #expect(ownReply.status == .ok)
            #expect(try ownReply.string("state") == "valid", "a repeat of the winning attempt")
            #expect(otherReply.status == .gone)
            #expect(otherReply.headers[Redemption.redeemedByHeader] == winner.uuidString.lowercased())
        }
    }

    @Test("the internal port admits only the callers its allowlist names")
    func internalAuthentication() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let otp = UUID().uuidString.lowercased()
            let anonymous = try await service.internalApp.post(
                "/version/v1/srs",
                headers: .json,
                body: ByteBuffer(string: #"{"otp":"\#(otp)"}"#)
            )
            #expect(anonymous.status == .unauthorized)
            let wrongCaller = try await service.redeem("srs", otp, caller: "survey-service")
            #expect(wrongCaller.status == .forbidden)
        }
    }

    @Test("a fake self-report answers like a real one and stores nothing; cwa-fake is required")
    func fakeSelfReports() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let real = try await service.post(
                "android/srs",
                try world.androidSelfReport(),
                headers: DonationService.real
            )
            #expect(real.status == .ok)
            let before = try await service.stored()
            var fakeHeaders = DonationService.protobuf
            fakeHeaders[HTTPField.Name("cwa-fake")!] = "1"
            let fake = try await service.post("android/srs", try world.androidSelfReport(), headers: fakeHeaders)
            #expect(fake.status == real.status)
            #expect(fake.body.readableBytes == real.body.readableBytes)
            #expect(fake.headers.map(\.name) == real.headers.map(\.name))
            #expect(fake.headers[.contentLength] == real.headers[.contentLength])
            #expect(try await service.stored() == before)
            let iosFake = try await service.post(
                "ios/srs",
                try DonationWorld.iosSelfReport(otp: "x", deviceToken: "y", apiToken: "z"),
                headers: fakeHeaders
            )
            #expect(iosFake.status == .ok)
            let missing = try await service.post("android/srs", try world.androidSelfReport())
            #expect(missing.status == .badRequest)
            #expect(missing.errorCode == "FAKE_HEADER_MISSING")
            #expect(try await service.stored() == before)
        }
    }

    @Test("retention deletes what outlived its window and keeps the rest")
    func retention() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            #expect(
                try await service.post("android/dat", try world.androidAnalytics(DonationWorld.analytics())).status
                    == .ok
            )
            #expect(
                try await service.post("android/srs", try world.androidSelfReport(), headers: DonationService.real)
                    .status == .ok
            )
            let client = service.database.client
            try await client.query("UPDATE exposure_window SET submitted_at = submitted_at - 15")
            try await client.query("UPDATE exposure_risk_metadata SET submitted_at = submitted_at - 15")
            try await client.query("UPDATE salt SET created_at = created_at - interval '25 hours'")
            try await client.query("UPDATE one_time_password SET expires_at = expires_at - interval '8 days'")
            let outcome = try #require(
                try await service.runtime.dependencies.repository.applyRetention(
                    service.runtime.configuration.retention,
                    now: Date()
                )
            )
            #expect(outcome.deleted["exposure_window"] == 3, "two new windows and one at test registration")
            #expect(outcome.deleted["exposure_risk_metadata"] == 0)
            #expect(outcome.deleted["salt"] == 2)
            #expect(outcome.deleted["one_time_password"] == 1)
            #expect(try await service.count("exposure_window") == 0)
            #expect(try await service.count("exposure_risk_metadata") == 1)
            #expect(try await service.count("test_result_metadata") == 1)
            #expect(try await service.count("android_id") == 1)
        }
    }

    @Test("the analysts' role may connect and read the analytics tables, nothing else, and write nothing")
    func analystRole() async throws {
        let database = try PostgresTestDatabase.require()
        let readable = [
            "exposure_risk_metadata", "test_result_metadata", "key_submission_metadata", "exposure_window",
            "client_metadata", "nhs_mobile_analytics", "nhs_mobile_analytics_event",
        ]
        let secret = ["one_time_password", "salt", "android_id", "api_token", "device_token", "nhs_api_key"]
        func privilege(_ table: String, _ privilege: String) async throws -> Bool {
            let rows = try await database.client.query(
                "SELECT has_table_privilege('datadonation_analyst', \(table), \(privilege))"
            )
            for try await value in rows.decode(Bool.self) { return value }
            return false
        }
        for table in readable {
            #expect(try await privilege(table, "SELECT"), "\(table)")
            #expect(try await !privilege(table, "INSERT"), "\(table)")
            #expect(try await !privilege(table, "DELETE"), "\(table)")
        }
        for table in secret {
            #expect(try await !privilege(table, "SELECT"), "\(table)")
        }
        let rows = try await database.client.query(
            "SELECT has_database_privilege('datadonation_analyst', current_database(), 'CONNECT')"
        )
        var connect = false
        for try await value in rows.decode(Bool.self) { connect = value }
        #expect(connect)
    }
}
