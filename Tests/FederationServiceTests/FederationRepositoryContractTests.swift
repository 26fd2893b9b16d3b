// The in-memory federation tables keep the rules of the PostgreSQL ones: every scenario runs against both, and so
// does a whole upload and download over either set of stores.

import ENFederation
import ENKeyStore
import ENModels
import ENTestSupport
import Foundation
import Logging
import MetricsTestKit
import Testing

@testable import FederationService

@Suite("Federation tables contract (PostgreSQL and in memory)")
struct FederationRepositoryContractTests {
    /// The federation tables and the key store they sit beside, over one database (or one memory).
    struct Stores: Sendable {
        var federation: any FederationRepository
        var keys: any DiagnosisKeyRepository
    }

    private func withStores(_ backend: RepositoryBackend, _ body: @Sendable (Stores) async throws -> Void) async throws
    {
        try await backend.run(
            migrating: KeyStoreMigrations.group,
            inMemory: {
                let keys = InMemoryDiagnosisKeyRepository()
                return Stores(federation: InMemoryFederationRepository(keys: keys), keys: keys)
            },
            postgres: {
                Stores(
                    federation: PostgresFederationRepository(client: $0.client, logger: $0.logger),
                    keys: PostgresDiagnosisKeyRepository(client: $0.client, logger: $0.logger)
                )
            },
            body
        )
    }

    /// Keys of `bytes` (each key all that byte) submitted an hour before the fixture's start, past the expiry policy.
    private static func submission(
        _ bytes: [UInt8],
        type: String = "SUBMISSION_TYPE_PCR_TEST",
        consent: Bool = true
    )
        -> KeySubmission
    {
        let hour = FederationFixture.currentHour - 1
        var submission = KeySubmission.pcr(
            bytes.map { Array(repeating: $0, count: 16) },
            hour: hour,
            rollingStart: Int32((hour / 24 - 2) * 144),
            visited: ["DE", "FR"],
            consent: consent
        )
        submission.submissionType = type
        return submission
    }

    private static func store(_ keys: any DiagnosisKeyRepository, _ submission: KeySubmission) async throws {
        try await keys.storeGranted(submission)
    }

    @Test(
        "the upload mirror holds the consented PCR keys; each is marked by the first batch that takes it",
        arguments: RepositoryBackend.allCases
    )
    func uploadMirror(_ backend: RepositoryBackend) async throws {
        try await self.withStores(backend) { stores in
            try await Self.store(stores.keys, Self.submission([1, 2, 3]))
            try await Self.store(stores.keys, Self.submission([4], consent: false))
            try await Self.store(stores.keys, Self.submission([5], type: "SUBMISSION_TYPE_RAPID_TEST"))

            let pending = try await stores.federation.pendingUploadKeys()
            #expect(Set(pending.map(\.keyData)) == Set([1, 2, 3].map { Array(repeating: UInt8($0), count: 16) }))
            #expect(pending.allSatisfy { $0.originCountry == "DE" && $0.visitedCountries == ["DE", "FR"] })
            #expect(pending.allSatisfy { $0.submissionHour == FederationFixture.currentHour - 1 })

            let first = pending.filter { $0.keyData.first != 3 }
            #expect(try await stores.federation.markUploaded(first + first, tag: "b-1") == 2)
            #expect(try await stores.federation.markUploaded(pending, tag: "b-2") == 1, "key 3 alone was free")
            #expect(try await stores.federation.markUploaded(pending, tag: "b-3") == 0)
            #expect(try await stores.federation.pendingUploadKeys().isEmpty)
        }
    }

    @Test(
        "a batch is announced once and keeps its state; listed by state in announcement order; forgotten by day",
        arguments: RepositoryBackend.allCases
    )
    func batches(_ backend: RepositoryBackend) async throws {
        try await self.withStores(backend) { stores in
            let federation = stores.federation
            #expect(try await federation.announce(tag: "a", day: "2026-11-20"))
            #expect(try await federation.announce(tag: "b", day: "2026-11-21"))
            #expect(try await federation.announce(tag: "c", day: "2026-11-22", status: .error))
            try await federation.setStatus(.processed, tag: "a")
            #expect(try await federation.announce(tag: "a", day: "2026-11-22") == false)

            #expect(
                try await federation.batches(.processed) == [BatchInfo(tag: "a", day: "2026-11-20", status: .processed)]
            )
            #expect(try await federation.batches(.error).map(\.tag) == ["c"])
            try await federation.setStatus(.unprocessed, tag: "c")
            #expect(try await federation.batches(.unprocessed).map(\.tag) == ["b", "c"])
            #expect(try await federation.isKnown(tag: "a"))
            #expect(try await federation.isKnown(tag: "d") == false)

            #expect(try await federation.forgetBatches(of: "2026-11-21") == 1)
            #expect(try await federation.forgetBatches(before: "2026-11-22") == 1)
            #expect(try await federation.isKnown(tag: "a") == false)
            #expect(try await federation.batches(.unprocessed).map(\.tag) == ["c"])
        }
    }

    @Test("each job runs once at a time: a second run of it finds the lock held", arguments: RepositoryBackend.allCases)
    func jobsExclusive(_ backend: RepositoryBackend) async throws {
        try await self.withStores(backend) { stores in
            let federation = stores.federation
            let inside = try await federation.exclusively(.upload) {
                let again = try await federation.exclusively(.upload) { "ran" }
                let other = try await federation.exclusively(.download) { "ran" }
                return [again ?? "held", other ?? "held"]
            }
            #expect(inside == ["held", "ran"])
            #expect(try await federation.exclusively(.upload) { "ran" } == "ran", "the lock is given back")
            struct Failed: Error {}
            await #expect(throws: Failed.self) { try await federation.exclusively(.download) { throw Failed() } }
            #expect(try await federation.exclusively(.download) { "ran" } == "ran", "also after a failed run")
        }
    }

    @Test(
        "upload and download on either set of stores: our keys reach the gateway once, the partner's reach publication",
        arguments: RepositoryBackend.allCases
    )
    func uploadAndDownload(_ backend: RepositoryBackend) async throws {
        try await self.withStores(backend) { stores in
            let gateway = ScriptedGateway()
            let clock = ManualClock(FederationFixture.start)
            let germany = try Country("DE")
            let france = try Country("FR")
            let logger = Logger(label: "test.federation")
            let metrics = FederationMetrics(factory: TestMetrics())
            try await Self.store(stores.keys, Self.submission([1, 2]))

            var upload = UploadPolicy()
            upload.minimumKeys = 1
            let uploadRun = UploadRun(
                store: stores.federation,
                gateway: gateway,
                signer: germany.signer,
                policy: upload,
                clock: clock.wallClock,
                metrics: metrics,
                logger: logger
            )
            #expect(try await uploadRun.run()?.keysAccepted == 2)
            #expect(try await uploadRun.run()?.keysAccepted == 0)
            let sent: [[UInt8]] = gateway.uploads.flatMap(\.keys).map { Array($0.keyData) }
            let ours: [[UInt8]] = [[UInt8](repeating: 1, count: 16), [UInt8](repeating: 2, count: 16)]
            #expect(sent == ours, "one batch, sorted by key data")

            let foreign = FederationFixture.foreignKeys(3, origin: "FR", visited: [])
            var batch = DiagnosisKeyBatch()
            batch.keys = foreign
            gateway.offer(
                DownloadedBatch(tag: "fr-1", nextTag: nil, batch: batch),
                day: FederationFixture.today,
                audit: [try france.auditEntry(foreign, at: clock.now)]
            )
            try await stores.federation.announce(tag: "fr-1", day: FederationFixture.today)
            let downloadRun = DownloadRun(
                store: stores.federation,
                keys: stores.keys,
                gateway: gateway,
                acceptance: KeyAcceptance(),
                verification: BatchVerification(
                    verifier: BatchSignatureVerifier(
                        anchors: try #require(BatchTrustAnchor.registeredBySubject([france.certificate.certificate]))
                    ),
                    ownCountry: "DE"
                ),
                policy: DownloadPolicy(),
                clock: clock.wallClock,
                metrics: metrics,
                logger: logger
            )
            #expect(try await downloadRun.run() == DownloadOutcome(batchesProcessed: 1, keysStored: 3))

            let published = try #require(
                try await stores.keys.withPublicationRun { try await $0.keys(minimumTRL: 1, fromHour: 0) }
            )
            let fromFrance: Set<[UInt8]> = Set(published.filter { $0.origin.description == "FR" }.map(\.keyData.bytes))
            let offered: Set<[UInt8]> = Set(foreign.map { Array($0.keyData) })
            #expect(fromFrance == offered)
            #expect(try await stores.federation.pendingUploadKeys().isEmpty, "downloaded keys are never uploaded")
            #expect(try await stores.federation.batches(.processed).map(\.tag) == ["fr-1"])
        }
    }
}
