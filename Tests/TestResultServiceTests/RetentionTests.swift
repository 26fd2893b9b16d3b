// Masking after 21 days and deletion after 60 days under an injected clock, and the cross-replica lock.

import ENModels
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import TestResultService

@Suite("Retention (PostgreSQL)", .postgres(TestResultMigrations.group))
struct RetentionTests {
    static let day: TimeInterval = 86400

    /// The service's dependencies on the test's database, reading `clock`.
    private func dependencies(_ database: PostgresTestDatabase, clock: ManualClock) -> TestResultDependencies {
        TestResultDependencies.postgres(client: database.client, logger: database.logger, clock: clock.wallClock)
    }

    /// Stores one result of `code` for `id`, created at the clock's time.
    private func store(
        _ id: String,
        code: Int,
        in dependencies: TestResultDependencies,
        clock: ManualClock
    ) async throws {
        _ = try await dependencies.repository.store(
            [
                ResultUpload(
                    key: id,
                    result: try #require(LabTestResult(code: code)),
                    sampleCollectedAt: clock.now,
                    labID: nil
                )
            ],
            now: clock.now
        )
    }

    @Test("after 21 days results read as redeemed of their own kind; after 60 days they are gone")
    func masksThenDeletes() async throws {
        let database = try PostgresTestDatabase.require()
        let clock = ManualClock()
        let dependencies = self.dependencies(database, clock: clock)
        let repository = dependencies.repository
        let policy = RetentionPolicy()
        let metrics = TestResultMetrics(factory: ServiceEnvironment.testing().metricsFactory)
        let retention = TestResult.retention(
            policy: policy,
            dependencies: dependencies,
            metrics: metrics,
            logger: database.logger
        )
        let pcr = TestIDs.hashedGUID()
        let rapid = TestIDs.hashedGUID()
        let pocnat = TestIDs.hashedGUID()
        let young = TestIDs.hashedGUID()
        _ = try await repository.store(
            [
                ResultUpload(key: pcr, result: LabTestResult(code: 2)!, sampleCollectedAt: clock.now, labID: nil),
                ResultUpload(key: rapid, result: LabTestResult(code: 7)!, sampleCollectedAt: clock.now, labID: nil),
                ResultUpload(key: pocnat, result: LabTestResult(code: 11)!, sampleCollectedAt: clock.now, labID: nil),
            ],
            now: clock.now
        )
        clock.advance(by: 20 * Self.day)
        try await self.store(young, code: 1, in: dependencies, clock: clock)

        try await retention.run()
        let atDay20 = try await self.codes(database)
        clock.advance(by: 1 * Self.day + 1)
        try await retention.run()
        let atDay21 = try await self.codes(database)
        clock.advance(by: 39 * Self.day)
        try await retention.run()
        let atDay60 = try await self.codes(database)

        #expect(atDay20 == [pcr: 2, rapid: 7, pocnat: 11, young: 1])
        #expect(atDay21 == [pcr: 4, rapid: 9, pocnat: 14, young: 1])
        #expect(atDay60 == [young: 4])
    }

    @Test("a masked result stays masked when a lab uploads it again")
    func maskedStaysMasked() async throws {
        let database = try PostgresTestDatabase.require()
        let clock = ManualClock()
        let repository = PostgresTestResultRepository(client: database.client, logger: database.logger)
        let id = TestIDs.hashedGUID()
        _ = try await repository.store(
            [ResultUpload(key: id, result: LabTestResult(code: 2)!, sampleCollectedAt: clock.now, labID: nil)],
            now: clock.now
        )
        clock.advance(by: 22 * Self.day)
        _ = try await repository.applyRetention(
            maskBefore: RetentionPolicy().maskCutoff(now: clock.now),
            deleteBefore: .distantPast,
            now: clock.now
        )

        let outcome = try await repository.store(
            [ResultUpload(key: id, result: LabTestResult(code: 2)!, sampleCollectedAt: clock.now, labID: nil)],
            now: clock.now
        )

        #expect(outcome == StoreOutcome(inserted: 0, updated: 0, unchanged: 1))
        #expect(try await self.codes(database) == [id: 4])
    }

    @Test("retention is skipped while another replica holds its lock")
    func skippedWhileLocked() async throws {
        let database = try PostgresTestDatabase.require()
        let repository = PostgresTestResultRepository(client: database.client, logger: database.logger)
        let id = TestIDs.hashedGUID()
        _ = try await repository.store(
            [ResultUpload(key: id, result: LabTestResult(code: 2)!, sampleCollectedAt: Date(), labID: nil)],
            now: .distantPast
        )
        let holding = OneShot<Void>()
        let release = OneShot<Void>()

        let holder = Task {
            // Signal even when the transaction or the lock fails, so the test fails instead of waiting forever.
            defer { holding.fulfil(()) }
            try await database.client.withTransaction(logger: database.logger) { connection in
                try await PostgresTestResultRepository.retentionLock.lock(
                    connection: connection,
                    logger: database.logger
                )
                holding.fulfil(())
                await release.wait()
            }
        }
        await holding.wait()
        let whileHeld = try await repository.applyRetention(maskBefore: Date(), deleteBefore: .distantPast, now: Date())
        release.fulfil(())
        try await holder.value
        let afterwards = try await repository.applyRetention(
            maskBefore: Date(),
            deleteBefore: .distantPast,
            now: Date()
        )

        #expect(whileHeld == nil)
        #expect(afterwards == TestResultRetentionOutcome(masked: 1, deleted: 0))
    }

    @Test("the application runs retention by itself at start and again every RETENTION_INTERVAL")
    func periodicTaskRunsRetention() async throws {
        let database = try PostgresTestDatabase.require()
        let clock = ManualClock()
        let dependencies = self.dependencies(database, clock: clock)
        let first = TestIDs.hashedGUID()
        try await self.store(first, code: 7, in: dependencies, clock: clock)
        clock.advance(by: 22 * Self.day)
        let configuration = try TestResultFixture.configuration(["RETENTION_INTERVAL": "1s"])
        let app = try TestResult.buildApplication(
            configuration: configuration,
            dependencies: dependencies,
            environment: .testing()
        )
        let second = TestIDs.hashedGUID()

        let observed = Mutexed<(atStart: Bool, stored: [String: Int], later: Bool)>((false, [:], false))
        try await LiveServer.run(app) { _ in
            // The first pass runs when the application starts.
            observed.value.atStart = try await Poll.until(every: .milliseconds(100), attempts: 300) {
                try await self.codes(database) == [first: 9]
            }
            // A result that becomes due only after the first pass: a later pass must mask it.
            try await self.store(second, code: 2, in: dependencies, clock: clock)
            observed.value.stored = try await self.codes(database)
            clock.advance(by: 22 * Self.day)
            observed.value.later = try await Poll.until(every: .milliseconds(100), attempts: 300) {
                try await self.codes(database) == [first: 9, second: 4]
            }
        }

        #expect(observed.value.atStart, "the first pass did not mask the result due at start")
        #expect(observed.value.stored == [first: 9, second: 2])
        #expect(observed.value.later, "no later pass masked the result that became due after the first")
    }

    private func codes(_ database: PostgresTestDatabase) async throws -> [String: Int] {
        let rows = try await database.client.query("SELECT result_id, result FROM test_result")
        var codes: [String: Int] = [:]
        for try await (key, code) in rows.decode((String, Int16).self) {
            codes[key] = Int(code)
        }
        return codes
    }
}
