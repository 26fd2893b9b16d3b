// The in-memory key store keeps the rules of the PostgreSQL one: every scenario runs against both.

import ENKeyStore
import ENTestSupport
import Foundation
import Testing

@Suite("Key store contract (PostgreSQL and in memory)")
struct DiagnosisKeyRepositoryContractTests {
    static let pcr = "SUBMISSION_TYPE_PCR_TEST"
    static let rapid = "SUBMISSION_TYPE_RAPID_TEST"
    /// Hours since the epoch: 2024-10-03 00:00 UTC.
    static let hour: Int64 = 480_000

    /// Why a test's authorisation refuses.
    enum Refusal: Error, Equatable {
        case tanInvalid
    }

    /// A publication run that fails after its deletions.
    struct RunFailed: Error {}

    /// Runs `body` on a fresh key store of `backend`; only the PostgreSQL case has a database.
    private func withRepository(
        _ backend: RepositoryBackend,
        _ body: @Sendable (any DiagnosisKeyRepository) async throws -> Void
    ) async throws {
        try await backend.run(
            migrating: KeyStoreMigrations.group,
            inMemory: { InMemoryDiagnosisKeyRepository() },
            postgres: { PostgresDiagnosisKeyRepository(client: $0.client, logger: $0.logger) },
            body
        )
    }

    // MARK: - Rows

    /// A key whose 16 bytes are all `byte`.
    private static func key(_ byte: UInt8, trl: Int32 = 6, start: Int32 = 2_800_000) -> DiagnosisKeyRow {
        DiagnosisKeyRow(
            keyData: Array(repeating: byte, count: 16),
            rollingStartIntervalNumber: start,
            rollingPeriod: 144,
            transmissionRiskLevel: trl,
            daysSinceOnsetOfSymptoms: 1,
            reportType: "CONFIRMED_TEST"
        )
    }

    /// An encrypted check-in whose fields are filled with `byte`.
    private static func report(_ byte: UInt8) -> ProtectedReportRow {
        ProtectedReportRow(
            locationIDHash: Array(repeating: byte, count: 32),
            iv: Array(repeating: byte, count: 16),
            encryptedCheckInRecord: Array(repeating: byte &+ 1, count: 16),
            mac: Array(repeating: byte &+ 2, count: 32)
        )
    }

    /// An unencrypted check-in at the location filled with `byte`.
    private static func warning(_ byte: UInt8, start: Int32 = 2_800_000) -> TraceWarningRow {
        TraceWarningRow(
            traceLocationID: Array(repeating: byte, count: 32),
            startIntervalNumber: start,
            period: 6,
            transmissionRiskLevel: 7
        )
    }

    private static func submission(
        _ type: String = Self.pcr,
        hour: Int64 = Self.hour,
        keys: [DiagnosisKeyRow] = [],
        reports: [ProtectedReportRow] = [],
        warnings: [TraceWarningRow] = [],
        visited: [String] = ["DE", "FR"]
    ) -> KeySubmission {
        KeySubmission(
            submissionType: type,
            originCountry: "DE",
            visitedCountries: visited,
            consentToFederation: true,
            submissionHour: hour,
            keys: keys,
            protectedReports: reports,
            traceWarnings: warnings
        )
    }

    /// Stores `submission` with an authorisation that always grants.
    @discardableResult
    private static func store(
        _ repository: any DiagnosisKeyRepository,
        _ submission: KeySubmission
    ) async throws -> KeySubmissionOutcome {
        try await repository.storeGranted(submission)
    }

    /// Stores, for each `(offset, byte)`, a submission at `hour + offset` with one key, one encrypted and one
    /// unencrypted check-in, all filled with `byte`.
    private static func storeHourly(
        _ repository: any DiagnosisKeyRepository,
        _ entries: [(offset: Int64, byte: UInt8)]
    ) async throws {
        for (offset, byte) in entries {
            try await Self.store(
                repository,
                Self.submission(
                    hour: Self.hour + offset,
                    keys: [Self.key(byte)],
                    reports: [Self.report(byte)],
                    warnings: [Self.warning(byte)]
                )
            )
        }
    }

    /// Everything a publication run reads: keys sorted by key data and transmission risk (the store gives them in
    /// no particular order), check-ins in the order the store gives them.
    private struct Contents: Equatable {
        var keys: [DistributionKey]
        var reports: [StoredCheckInReport]
        var warnings: [StoredTraceWarning]

        static func read(
            _ run: any KeyPublicationRun,
            minimumTRL: Int = 1,
            fromHour: Int64 = 0,
            after: Int64 = 0,
            before: Int64 = .max
        ) async throws -> Contents {
            Contents(
                keys: try await run.keys(minimumTRL: minimumTRL, fromHour: fromHour).sorted {
                    ($0.keyData, $0.transmissionRiskLevel) < ($1.keyData, $1.transmissionRiskLevel)
                },
                reports: try await run.checkInReports(after: after, before: before),
                warnings: try await run.traceWarnings(after: after, before: before)
            )
        }
    }

    /// What a publication run reads of the whole store.
    private static func contents(_ repository: any DiagnosisKeyRepository) async throws -> Contents {
        try #require(try await repository.withPublicationRun { try await Contents.read($0) })
    }

    /// The key data of every key a run reads, with its transmission risk level, sorted.
    private static func keyBytes(_ contents: Contents) -> [[UInt8]] {
        contents.keys.map { $0.keyData.bytes + [UInt8($0.transmissionRiskLevel)] }
    }

    // MARK: - Submissions

    @Test(
        "every key of the NHS app is read for publication, whatever its transmission risk; other keys from the minimum",
        arguments: RepositoryBackend.allCases
    )
    func nhsKeysIgnoreTheMinimum(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            var nhs = Self.submission(keys: (1...8).map { Self.key(UInt8($0), trl: Int32($0)) }, visited: ["DE"])
            nhs.fromNHSApp = true
            nhs.consentToFederation = false
            try await Self.store(repository, nhs)
            try await Self.store(repository, Self.submission(keys: [Self.key(20, trl: 1), Self.key(21, trl: 3)]))
            let read = try #require(
                try await repository.withPublicationRun { try await Contents.read($0, minimumTRL: 3) }
            )
            let nhsKeys: [[UInt8]] = (1...8).map { Array(repeating: UInt8($0), count: 16) + [UInt8($0)] }
            let cwaKey: [UInt8] = Array(repeating: 21, count: 16) + [3]
            #expect(Self.keyBytes(read) == nhsKeys + [cwaKey])
        }
    }

    @Test(
        "a PCR key is never overwritten by a rapid-test key; a rapid-test key gets a PCR key beside it",
        arguments: RepositoryBackend.allCases
    )
    func pcrOverRapidTest(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let pcrFirst = try await Self.store(repository, Self.submission(Self.pcr, keys: [Self.key(1, trl: 8)]))
            let rapidAfter = try await Self.store(
                repository,
                Self.submission(Self.rapid, keys: [Self.key(1, trl: 3), Self.key(2, trl: 3)])
            )
            let pcrAfterRapid = try await Self.store(repository, Self.submission(Self.pcr, keys: [Self.key(2, trl: 8)]))

            #expect(pcrFirst.keys == 1)
            #expect(rapidAfter.keys == 1)
            #expect(pcrAfterRapid.keys == 1)
            #expect(
                Self.keyBytes(try await Self.contents(repository)) == [
                    Array(repeating: 1, count: 16) + [8], Array(repeating: 2, count: 16) + [3],
                    Array(repeating: 2, count: 16) + [8],
                ]
            )
        }
    }

    @Test(
        "federated keys are stored as PCR keys with their own countries, by the submission rule, and are read for publication",
        arguments: RepositoryBackend.allCases
    )
    func federatedKeys(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            try await Self.store(repository, Self.submission(Self.pcr, keys: [Self.key(1, trl: 8)]))
            try await Self.store(repository, Self.submission(Self.rapid, keys: [Self.key(3, trl: 3)]))
            let downloaded = [
                FederatedKey(row: Self.key(1, trl: 5), originCountry: "FR", visitedCountries: ["FR"]),
                FederatedKey(row: Self.key(2, trl: 5), originCountry: "FR", visitedCountries: ["FR", "DE"]),
                FederatedKey(row: Self.key(3, trl: 6), originCountry: "IT", visitedCountries: ["IT"]),
                FederatedKey(row: Self.key(4, trl: 7), originCountry: "BE", visitedCountries: []),
            ]

            let stored = try await repository.storeFederated(downloaded, submissionHour: Self.hour + 2)
            let again = try await repository.storeFederated(downloaded, submissionHour: Self.hour + 3)
            let submittedAfter = try await Self.store(repository, Self.submission(Self.pcr, keys: [Self.key(2)]))
            let contents = try await Self.contents(repository)

            #expect(stored == 3, "key 1 is stored as a PCR key already; key 3 only as a rapid-test one")
            #expect(again == 0)
            #expect(submittedAfter.keys == 0, "a federated key is a PCR key")
            let federated = contents.keys.filter { $0.submissionHour == Self.hour + 2 }
            #expect(federated.map(\.keyData.bytes) == [2, 3, 4].map { Array(repeating: UInt8($0), count: 16) })
            #expect(federated.map(\.origin.description) == ["FR", "IT", "BE"])
            #expect(federated.map(\.visited.codes) == [["DE", "FR"], ["IT"], []])
            #expect(federated.map(\.listsNoCountry) == [false, false, true])
            #expect(federated.map(\.transmissionRiskLevel) == [5, 6, 7])
            #expect(contents.keys.count == 5)
        }
    }

    @Test("a federated batch with a key the table refuses stores none of it", arguments: RepositoryBackend.allCases)
    func federatedKeysAllOrNone(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            var short = Self.key(6)
            short.keyData.removeLast()
            let batch = [
                FederatedKey(row: Self.key(5), originCountry: "FR", visitedCountries: ["FR"]),
                FederatedKey(row: short, originCountry: "FR", visitedCountries: ["FR"]),
            ]

            await #expect(throws: (any Error).self) {
                try await repository.storeFederated(batch, submissionHour: Self.hour)
            }
            let contents = try await Self.contents(repository)
            #expect(contents.keys.isEmpty)
        }
    }

    @Test(
        "the same key and type is stored once, also when one submission holds it twice",
        arguments: RepositoryBackend.allCases
    )
    func sameKeyOnce(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let twice = try await Self.store(
                repository,
                Self.submission(Self.rapid, keys: [Self.key(1, trl: 3), Self.key(1, trl: 5), Self.key(2)])
            )
            let again = try await Self.store(repository, Self.submission(Self.rapid, keys: [Self.key(1, trl: 7)]))
            let contents = try await Self.contents(repository)

            #expect(twice.keys == 2)
            #expect(again.keys == 0)
            #expect(contents.keys.count == 2)
            #expect(contents.keys.first?.transmissionRiskLevel == 3, "the first of the duplicates is kept")
        }
    }

    @Test(
        "an encrypted check-in is stored once; unencrypted ones every time; keys and check-ins in one submission",
        arguments: RepositoryBackend.allCases
    )
    func checkInsOnce(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let first = try await Self.store(
                repository,
                Self.submission(
                    keys: [Self.key(1)],
                    reports: [Self.report(1), Self.report(1), Self.report(2)],
                    warnings: [Self.warning(1), Self.warning(1)]
                )
            )
            let retried = try await Self.store(
                repository,
                Self.submission(keys: [Self.key(2)], reports: [Self.report(2)], warnings: [Self.warning(1)])
            )
            let contents = try await Self.contents(repository)

            #expect(first == KeySubmissionOutcome(keys: 1, protectedReports: 2, traceWarnings: 2, checkInsStored: true))
            #expect(
                retried == KeySubmissionOutcome(keys: 1, protectedReports: 0, traceWarnings: 1, checkInsStored: true)
            )
            #expect(contents.reports.map(\.locationIDHash) == [Self.report(1), Self.report(2)].map(\.locationIDHash))
            #expect(contents.warnings.count == 3)
            #expect(contents.keys.count == 2)
        }
    }

    @Test("check-ins without keys are stored, as sent", arguments: RepositoryBackend.allCases)
    func checkInsWithoutKeys(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let report = Self.report(5)
            let warning = Self.warning(6, start: 2_800_144)

            let outcome = try await Self.store(
                repository,
                Self.submission(Self.rapid, hour: Self.hour + 1, reports: [report], warnings: [warning])
            )
            let contents = try await Self.contents(repository)

            #expect(
                outcome == KeySubmissionOutcome(keys: 0, protectedReports: 1, traceWarnings: 1, checkInsStored: true)
            )
            #expect(contents.keys.isEmpty)
            #expect(
                contents.reports == [
                    StoredCheckInReport(
                        locationIDHash: report.locationIDHash,
                        initializationVector: report.iv,
                        encryptedCheckInRecord: report.encryptedCheckInRecord,
                        mac: report.mac,
                        submissionHour: Self.hour + 1
                    )
                ]
            )
            #expect(
                contents.warnings == [
                    StoredTraceWarning(
                        locationIDHash: warning.traceLocationID,
                        startIntervalNumber: 2_800_144,
                        period: 6,
                        transmissionRiskLevel: 7,
                        submissionHour: Self.hour + 1
                    )
                ]
            )
        }
    }

    @Test(
        "authorize throwing stores nothing and surfaces as .refused with its own error; granting stores",
        arguments: RepositoryBackend.allCases
    )
    func refusedAuthorization(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let submission = Self.submission(
                keys: [Self.key(1)],
                reports: [Self.report(1)],
                warnings: [Self.warning(1)]
            )
            var refusal: Refusal?
            do {
                _ = try await repository.store(submission) { (_: UUID) async throws(Refusal) in throw .tanInvalid }
                Issue.record("a refused submission was stored")
            } catch let failure as KeySubmissionFailure<Refusal> {
                if case .refused(let error) = failure { refusal = error }
            }
            let afterRefusal = try await Self.contents(repository)
            let granted = try await repository.store(submission) { (_: UUID) async throws(Refusal) in }

            #expect(refusal == .tanInvalid)
            #expect(afterRefusal == Contents(keys: [], reports: [], warnings: []))
            #expect(
                granted == KeySubmissionOutcome(keys: 1, protectedReports: 1, traceWarnings: 1, checkInsStored: true)
            )
        }
    }

    @Test(
        "a key the schema refuses (15 bytes) stores nothing and fails as the database, after the authorisation",
        arguments: RepositoryBackend.allCases
    )
    func schemaRefusesKey(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            var short = Self.key(2)
            short.keyData.removeLast()
            let submission = Self.submission(keys: [Self.key(1), short], reports: [Self.report(1)], warnings: [])
            var afterAuthorization: Bool?
            do {
                _ = try await repository.store(submission) { (_: UUID) async throws(Refusal) in }
                Issue.record("a 15-byte key was stored")
            } catch let failure as KeySubmissionFailure<Refusal> {
                if case .database(_, let after) = failure { afterAuthorization = after }
            }

            #expect(afterAuthorization == true)
            #expect(try await Self.contents(repository) == Contents(keys: [], reports: [], warnings: []))
        }
    }

    // MARK: - Publication runs

    @Test(
        "a run reads keys from a TRL and an hour on, and check-ins strictly between two hours, in the order stored",
        arguments: RepositoryBackend.allCases
    )
    func publicationReads(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let hour = Self.hour
            try await Self.store(
                repository,
                Self.submission(hour: hour - 1, keys: [Self.key(1, trl: 8)], reports: [Self.report(1)])
            )
            // Stored before the earlier hour's check-ins: the store's order, not the hours', is the order read.
            try await Self.store(
                repository,
                Self.submission(
                    hour: hour + 1,
                    keys: [Self.key(2, trl: 3), Self.key(3, trl: 2)],
                    reports: [Self.report(3)],
                    warnings: [Self.warning(3)],
                    visited: []
                )
            )
            try await Self.store(
                repository,
                Self.submission(
                    Self.rapid,
                    hour: hour,
                    keys: [Self.key(4, trl: 5, start: 2_800_144)],
                    reports: [Self.report(2)],
                    warnings: [Self.warning(2), Self.warning(4)]
                )
            )
            try await Self.store(repository, Self.submission(hour: hour + 2, reports: [Self.report(4)]))

            let read = try #require(
                try await repository.withPublicationRun {
                    try await Contents.read($0, minimumTRL: 3, fromHour: hour, after: hour - 1, before: hour + 2)
                }
            )

            #expect(
                read.keys == [
                    DistributionKey(
                        keyData: KeyData(high: 0x0202_0202_0202_0202, low: 0x0202_0202_0202_0202),
                        rollingStartIntervalNumber: 2_800_000,
                        rollingPeriod: 144,
                        transmissionRiskLevel: 3,
                        submissionHour: hour + 1,
                        originCountry: "DE",
                        visitedCountries: []
                    ),
                    DistributionKey(
                        keyData: KeyData(high: 0x0404_0404_0404_0404, low: 0x0404_0404_0404_0404),
                        rollingStartIntervalNumber: 2_800_144,
                        rollingPeriod: 144,
                        transmissionRiskLevel: 5,
                        submissionHour: hour,
                        originCountry: "DE",
                        visitedCountries: ["DE", "FR"]
                    ),
                ]
            )
            #expect(read.reports.map(\.locationIDHash) == [Self.report(3), Self.report(2)].map(\.locationIDHash))
            #expect(read.reports.map(\.submissionHour) == [hour + 1, hour])
            #expect(
                read.warnings.map(\.locationIDHash)
                    == [Self.warning(3), Self.warning(2), Self.warning(4)].map(\.traceLocationID)
            )
        }
    }

    @Test(
        "self-report statistics are deleted by day, apart from the keys, and kept until their own cutoff",
        arguments: RepositoryBackend.allCases
    )
    func selfReportRetention(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let day = Self.hour / 24
            for (offset, byte) in [(-2, UInt8(1)), (-1, 2), (0, 3)] {
                var submission = Self.submission(
                    "SUBMISSION_TYPE_SRS_SELF_TEST",
                    hour: Self.hour + Int64(offset) * 24,
                    keys: [Self.key(byte)]
                )
                submission.consentToFederation = false
                submission.selfReport = SelfReportLimits(maxKeysPerDay: 1000)
                try await Self.store(repository, submission)
            }
            let deleted = try await repository.withPublicationRun { try await $0.deleteSelfReports(before: day - 1) }
            #expect(deleted == 1)
            let again = try await repository.withPublicationRun { try await $0.deleteSelfReports(before: day - 1) }
            #expect(again == 0)
            let keys = try await repository.withPublicationRun { try await $0.keys(minimumTRL: 1, fromHour: 0) }
            #expect(keys?.count == 3, "the keys are not touched")
        }
    }

    @Test(
        "deleting before an hour removes the keys, check-ins and warnings of earlier hours only",
        arguments: RepositoryBackend.allCases
    )
    func deletionBeforeHour(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let hour = Self.hour
            try await Self.storeHourly(repository, [(-2, 1), (-1, 2), (0, 3)])

            let outcome = try await repository.withPublicationRun { try await $0.deleteSubmitted(before: hour) }
            let left = try await Self.contents(repository)

            #expect(outcome == KeyRetentionOutcome(keys: 2, checkInReports: 2, traceWarnings: 2))
            #expect(left.keys.map(\.submissionHour) == [hour])
            #expect(left.reports.map(\.submissionHour) == [hour])
            #expect(left.warnings.map(\.submissionHour) == [hour])
        }
    }

    @Test(
        "a second publication run while one runs gets nil; after it, a run starts",
        arguments: RepositoryBackend.allCases
    )
    func oneRunAtATime(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let outer = try await repository.withPublicationRun { _ in
                try await repository.withPublicationRun { _ in "second" }
            }
            let afterwards = try await repository.withPublicationRun { _ in "afterwards" }

            #expect(outer == .some(nil))
            #expect(afterwards == "afterwards")
        }
    }

    @Test(
        "a failing run's deletions are undone, and the run's own error surfaces",
        arguments: RepositoryBackend.allCases
    )
    func failingRunUndone(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let hour = Self.hour
            try await Self.storeHourly(repository, [(-1, 1), (0, 2)])
            let before = try await Self.contents(repository)

            await #expect(throws: RunFailed.self) {
                _ = try await repository.withPublicationRun { run in
                    #expect(try await run.deleteSubmitted(before: hour).keys == 1)
                    throw RunFailed()
                }
            }
            let after = try await Self.contents(repository)

            #expect(Self.keyBytes(after) == Self.keyBytes(before))
            #expect(Set(after.reports.map(\.locationIDHash)) == Set(before.reports.map(\.locationIDHash)))
            #expect(Set(after.warnings.map(\.locationIDHash)) == Set(before.warnings.map(\.locationIDHash)))
            #expect(after.reports == before.reports, "check-in reports in the order stored")
            #expect(after.warnings == before.warnings, "trace warnings in the order stored")
        }
    }
}
