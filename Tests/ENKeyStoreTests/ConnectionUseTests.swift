// A submission holds no database connection while its TAN is checked, and finds the database before the TAN is used.

import ENKeyStore
import ENPersistence
import ENTestSupport
import Foundation
import PostgresNIO
import Testing

@Suite("Key store connection use (PostgreSQL)", .postgres(KeyStoreMigrations.group))
struct ConnectionUseTests {
    enum Refusal: Error {}

    static func submission(_ byte: UInt8) -> KeySubmission {
        KeySubmission(
            submissionType: "SUBMISSION_TYPE_PCR_TEST",
            originCountry: "DE",
            visitedCountries: ["DE"],
            consentToFederation: false,
            submissionHour: 480_000,
            keys: [
                DiagnosisKeyRow(
                    keyData: Array(repeating: byte, count: 16),
                    rollingStartIntervalNumber: 2_800_000,
                    rollingPeriod: 144,
                    transmissionRiskLevel: 6,
                    daysSinceOnsetOfSymptoms: 1,
                    reportType: "CONFIRMED_TEST"
                )
            ],
            protectedReports: [],
            traceWarnings: []
        )
    }

    @Test("with a pool of one, a submission whose TAN check hangs does not keep a second one from storing")
    func authorizationHoldsNoConnection() async throws {
        let database = try PostgresTestDatabase.require()
        var configuration = database.configuration
        configuration.maxConnections = 1
        let client = configuration.makeClient(logger: database.logger)
        let running = Task { await client.run() }
        defer { running.cancel() }
        let repository = PostgresDiagnosisKeyRepository(client: client, logger: database.logger)

        let (checking, checkingStarted) = AsyncStream.makeStream(of: Void.self)
        let (gate, openGate) = AsyncStream.makeStream(of: Void.self)
        let slow = Task {
            defer { checkingStarted.finish() }  // a store that fails before its TAN check ends the wait below
            return try await repository.store(Self.submission(1)) { (_: UUID) async throws(Refusal) in
                checkingStarted.yield()
                for await _ in gate { break }
            }
        }
        for await _ in checking { break }

        // The second submission must finish while the first one's TAN check is still open. A bound (not a
        // measurement) keeps the test from hanging when it does not: the gate then opens (so the second one can
        // finish too) and the test fails.
        let second = Task { try await repository.store(Self.submission(2)) { (_: UUID) async throws(Refusal) in } }
        let finishedFirst = await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await second.value) != nil }
            group.addTask {
                try? await Task.sleep(for: .seconds(20))
                openGate.finish()
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        openGate.finish()
        let outcome = try await slow.value
        _ = try? await second.value

        #expect(finishedFirst, "the second submission waited for the first one's TAN check")
        #expect(outcome.keys == 1)
        #expect(try await database.count("diagnosis_key") == 2)
    }

    @Test("with the database unreachable, the TAN is never checked and the failure comes before authorisation")
    func unreachableBeforeTAN() async throws {
        let database = try PostgresTestDatabase.require()
        var configuration = database.configuration
        configuration.port = 1  // nothing listens there
        configuration.connectTimeout = .milliseconds(500)
        let client = configuration.makeClient(logger: database.logger)
        let running = Task { await client.run() }
        defer { running.cancel() }
        let repository = PostgresDiagnosisKeyRepository(
            client: client,
            logger: database.logger,
            leaseTimeout: .seconds(1)
        )
        let asked = Mutexed(false)
        do {
            _ = try await repository.store(Self.submission(1)) { (_: UUID) async throws(Refusal) in
                asked.withLock { $0 = true }
            }
            Issue.record("a submission was stored without a database")
        } catch {
            guard case .database(_, let afterAuthorization) = error else {
                Issue.record("unexpected failure \(error)")
                return
            }
            #expect(!afterAuthorization)
        }
        #expect(!asked.withLock { $0 })
    }
}
