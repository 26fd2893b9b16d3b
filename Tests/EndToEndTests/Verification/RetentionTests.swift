// The clean-up: sessions and TANs after 21 days, consumed TANs after the redemption retention, expired TANs and
// teleTANs (cwa-satellites §1.6).

import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import PostgresNIO
import Testing

@testable import TestResultService
@testable import VerificationService

@Suite("Retention (PostgreSQL)", .postgres(VerificationMigrations.group, TestResultMigrations.group))
struct RetentionTests {
    static let day: TimeInterval = 86400

    @Test("what is old, consumed or expired goes; what is young and usable stays")
    func cleanUp() async throws {
        try await VerificationHarness.run { harness async throws in
            // Day 0: a session with a consumed TAN, a session with an unused TAN, a TEST teleTAN.
            let consumedGUID = TestIDs.hashedGUID()
            let unusedGUID = TestIDs.hashedGUID()
            try await harness.labResult(consumedGUID, code: 2)
            try await harness.labResult(unusedGUID, code: 2)
            let consumedDOB = TestIDs.dobHash()
            try await harness.labResult(consumedDOB, code: 2)
            let consumed =
                try await harness.requestTAN(try await harness.registeredToken(guid: consumedGUID, dob: consumedDOB))
                .string("tan") ?? ""
            #expect(try await harness.verify(consumed).status == .ok)
            let unused = try await harness.requestTAN(try await harness.registeredToken(guid: unusedGUID))
            #expect(unused.status == .created, "\(unused.text)")
            _ = try await harness.teleTAN(.test)

            try await Verification.retention(harness.runtime).run()
            let afterDay0 = try await self.counts(harness)
            // Day 2: the TEST teleTAN expired an hour after creation and left the rate window.
            harness.clock.advance(by: 2 * Self.day)
            let young = TestIDs.hashedGUID()
            _ = try await harness.registeredToken(guid: young)
            try await Verification.retention(harness.runtime).run()
            let afterDay2 = try await self.counts(harness)
            // Day 3 + 1 s: the consumed TAN's record of its redemption passed REDEMPTION_RETENTION (3 days).
            harness.clock.advance(by: Self.day + 1)
            try await Verification.retention(harness.runtime).run()
            let afterDay3 = try await self.counts(harness)
            // Day 21 + 1 s: the day-0 sessions (and their registered keys) and the unused TAN are gone.
            harness.clock.advance(by: 18 * Self.day)
            try await Verification.retention(harness.runtime).run()
            let afterDay21 = try await self.counts(harness)
            // The GUID can register again once its session is gone.
            let reRegistration = try await harness.register(guid: consumedGUID)

            #expect(afterDay0 == Counts(sessions: 2, keys: 3, tans: 2, teleTANs: 1))
            #expect(afterDay2 == Counts(sessions: 3, keys: 4, tans: 2, teleTANs: 0))
            #expect(afterDay3 == Counts(sessions: 3, keys: 4, tans: 1, teleTANs: 0))
            #expect(afterDay21 == Counts(sessions: 1, keys: 1, tans: 0, teleTANs: 0))
            #expect(reRegistration.status == .created)
        }
    }

    @Test("an unused TAN that is still valid is deleted with its age: TAN_VALIDITY 30d, ENTITY_RETENTION 21d")
    func tansGoWithAge() async throws {
        try await VerificationHarness.run(["TAN_VALIDITY": "30d"]) { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            _ = try await harness.requestTAN(try await harness.registeredToken(guid: guid))
            harness.clock.advance(by: 21 * Self.day - 1)
            try await Verification.retention(harness.runtime).run()
            let before = try await harness.count("tan")
            harness.clock.advance(by: 2)
            try await Verification.retention(harness.runtime).run()
            let after = try await harness.count("tan")

            #expect(before == 1)
            #expect(after == 0)
        }
    }

    @Test(
        "an EVENT teleTAN stays while valid; with a rate window longer than its life it stays until it leaves the window"
    )
    func teleTANsCountUntilOutOfWindow() async throws {
        try await VerificationHarness.run(["TELETAN_RATE_WINDOW": "3d"]) { harness async throws in
            _ = try await harness.teleTAN(.event)
            harness.clock.advance(by: 2 * Self.day + 1)
            try await Verification.retention(harness.runtime).run()
            let expiredInWindow = try await harness.count("tele_tan")
            harness.clock.advance(by: Self.day)
            try await Verification.retention(harness.runtime).run()
            let outOfWindow = try await harness.count("tele_tan")

            #expect(expiredInWindow == 1)
            #expect(outOfWindow == 0)
        }
    }

    @Test("retention is skipped while another replica holds its lock")
    func skippedWhileLocked() async throws {
        try await VerificationHarness.run { harness async throws in
            let database = harness.database
            _ = try await harness.registeredToken(guid: TestIDs.hashedGUID())
            harness.clock.advance(by: 22 * Self.day)
            let outcome = try await database.client.withTransaction(logger: database.logger) { connection in
                try await PostgresVerificationRepository.retentionLock.lock(
                    connection: connection,
                    logger: database.logger
                )
                return try await harness.runtime.dependencies.repository.applyRetention(
                    cutoff: harness.clock.now,
                    now: harness.clock.now,
                    rateWindowStart: harness.clock.now,
                    redemptionCutoff: harness.clock.now
                )
            }
            #expect(outcome == nil)
            #expect(try await harness.count("app_session") == 1)
        }
    }

    struct Counts: Equatable {
        var sessions: Int
        var keys: Int
        var tans: Int
        var teleTANs: Int
    }

    private func counts(_ harness: VerificationHarness) async throws -> Counts {
        Counts(
            sessions: try await harness.count("app_session"),
            keys: try await harness.count("registered_key"),
            tans: try await harness.count("tan"),
            teleTANs: try await harness.count("tele_tan")
        )
    }
}
