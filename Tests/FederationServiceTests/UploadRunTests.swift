// Upload runs against the test's database and a scripted gateway (cwa-server §5.2): batches, signatures, the
// gateway's answers, and nothing acknowledged lost or sent twice.

import ENFederation
import ENKeyStore
import ENModels
import ENTestSupport
import Foundation
import NIOCore
import PostgresNIO
import Testing

@testable import FederationService

@Suite("Upload runs", .postgres(KeyStoreMigrations.group))
struct UploadRunTests {
    @Test("waiting keys go out in signed batches sorted by key data and are marked with their tag")
    func uploadsSignedBatches() async throws {
        let fixture = try FederationFixture()
        let keys = try await fixture.insertUploadable(150)
        try await fixture.insertUploadable(5, consent: false)
        let outcome = try #require(try await fixture.uploadRun().run())
        #expect(outcome == UploadOutcome(batchesAccepted: 1, keysAccepted: 150))
        let upload = try #require(fixture.gateway.uploads.first)
        #expect(fixture.gateway.uploads.count == 1)
        #expect(Set(upload.keys.map { Array($0.keyData) }) == Set(keys))
        #expect(upload.keys.map { Array($0.keyData) } == keys.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(upload.keys.allSatisfy { $0.origin == "DE" && $0.visitedCountries == ["DE", "FR"] })
        #expect(upload.keys.allSatisfy { $0.transmissionRiskLevel == 6 && $0.daysSinceOnsetOfSymptoms == 2 })
        #expect(upload.tag.hasPrefix("2026-11-22-") && upload.tag.hasSuffix("-1"))
        let verified = await BatchSignatureVerifier(
            anchors: [BatchTrustAnchor(certificate: fixture.germany.certificate.certificate, country: "DE")]
        )
        .verify(
            signature: upload.signature,
            batchBytes: BatchSignatureBytes.batch(of: upload.keys),
            country: "DE",
            at: fixture.clock.now
        )
        #expect(try verified.get().countryCode == "DE")
        #expect(try await fixture.count("federation_upload_key", where: "batch_tag = '\(upload.tag)'") == 150)

        let again = try #require(try await fixture.uploadRun().run())
        #expect(again == UploadOutcome())
        #expect(fixture.gateway.uploads.count == 1, "no key is sent twice")
    }

    @Test("fewer keys than the minimum wait; the setting lowers it for demonstrations")
    func minimumBatch() async throws {
        let fixture = try FederationFixture()
        try await fixture.insertUploadable(139)
        #expect(try await fixture.uploadRun().run() == UploadOutcome(keysWaiting: 139))
        #expect(fixture.gateway.uploads.isEmpty)
        let demo = try #require(try await fixture.uploadRun { $0.minimumKeys = 1 }.run())
        #expect(demo.keysAccepted == 139)
    }

    @Test("keys are split into equal batches of at most the maximum")
    func splitsBatches() async throws {
        let fixture = try FederationFixture()
        try await fixture.insertUploadable(9)
        let outcome = try #require(
            try await fixture.uploadRun {
                $0.minimumKeys = 2
                $0.maximumKeys = 4
            }.run()
        )
        #expect(outcome.batchesAccepted == 3)
        #expect(fixture.gateway.uploads.map(\.keys.count) == [3, 3, 3])
        #expect(Set(fixture.gateway.uploads.map(\.tag)).count == 3)
        #expect(fixture.gateway.uploads.map { $0.tag.split(separator: "-").last! }.sorted() == ["1", "2", "3"])
    }

    @Test("keys still within the expiry policy wait")
    func expiryPolicy() async throws {
        let fixture = try FederationFixture()
        // Valid until the end of the current hour's day: expired after now, so held back.
        let hour = FederationFixture.currentHour
        try await fixture.insertUploadable(1, hoursAgo: 0, rollingStart: Int32(hour / 24 * 144))
        let outcome = try #require(try await fixture.uploadRun { $0.minimumKeys = 1 }.run())
        #expect(outcome == UploadOutcome(keysWaiting: 1))
    }

    @Test("a 207 with conflicts marks the 409 keys and the unlisted ones; 201 and 500 keys go again")
    func multiStatus() async throws {
        let fixture = try FederationFixture()
        try await fixture.insertUploadable(6)
        fixture.gateway.answerUploads([.multiStatus(BatchUploadResponse(created: [0, 1], conflict: [2], failed: [3]))])
        let first = try #require(try await fixture.uploadRun { $0.minimumKeys = 1 }.run())
        #expect(first.keysAccepted == 3)
        #expect(first.keysDeferred == 3)
        let sent = fixture.gateway.uploads[0].keys.map { Array($0.keyData) }
        let second = try #require(try await fixture.uploadRun { $0.minimumKeys = 1 }.run())
        #expect(second.keysAccepted == 3)
        #expect(Set(fixture.gateway.uploads[1].keys.map { Array($0.keyData) }) == Set([sent[0], sent[1], sent[3]]))
        #expect(try await fixture.count("federation_upload_key", where: "batch_tag IS NULL") == 0)
    }

    @Test("a 207 without conflicts takes every key")
    func multiStatusAllCreated() async throws {
        let fixture = try FederationFixture()
        try await fixture.insertUploadable(3)
        fixture.gateway.answerUploads([.multiStatus(BatchUploadResponse(created: [0, 1, 2]))])
        #expect(try await fixture.uploadRun { $0.minimumKeys = 1 }.run()?.keysAccepted == 3)
    }

    @Test("a used batch tag (409) and a refusal (400) leave the keys for the next run, under a new tag")
    func refusals() async throws {
        let fixture = try FederationFixture()
        try await fixture.insertUploadable(4)
        fixture.gateway.answerUploads([.duplicateTag, .refused(status: 400, message: "Invalid signature")])
        #expect(
            try await fixture.uploadRun { $0.minimumKeys = 1 }.run()
                == UploadOutcome(batchesRefused: 1, keysDeferred: 4)
        )
        #expect(
            try await fixture.uploadRun { $0.minimumKeys = 1 }.run()
                == UploadOutcome(batchesRefused: 1, keysDeferred: 4)
        )
        #expect(try await fixture.uploadRun { $0.minimumKeys = 1 }.run()?.keysAccepted == 4)
        let tags = fixture.gateway.uploads.map(\.tag)
        #expect(Set(tags).count == 3)
        #expect(try await fixture.count("federation_upload_key", where: "batch_tag = '\(tags[2])'") == 4)
    }

    @Test("the gateway down: the run fails, the next sends everything once")
    func gatewayDown() async throws {
        let fixture = try FederationFixture()
        try await fixture.insertUploadable(5)
        fixture.gateway.failUploads(GatewayUnavailable(description: "connection refused"))
        await #expect(throws: GatewayUnavailable.self) { try await fixture.uploadRun { $0.minimumKeys = 1 }.run() }
        #expect(try await fixture.count("federation_upload_key", where: "batch_tag IS NULL") == 5)
        fixture.gateway.failUploads(nil)
        #expect(try await fixture.uploadRun { $0.minimumKeys = 1 }.run()?.keysAccepted == 5)
        #expect(fixture.gateway.uploads.count == 1)
    }

    @Test("a failure in a later batch keeps the earlier batch's marks")
    func partialRun() async throws {
        let fixture = try FederationFixture()
        try await fixture.insertUploadable(4)
        fixture.gateway.answerUploads([.created])
        let run = fixture.uploadRun {
            $0.minimumKeys = 1
            $0.maximumKeys = 2
        }
        // The first batch is taken; the second finds the gateway gone.
        let failing = FailingAfterFirst(inner: fixture.gateway)
        let broken = UploadRun(
            store: run.store,
            gateway: failing,
            signer: run.signer,
            policy: run.policy,
            clock: run.clock,
            metrics: run.metrics,
            logger: run.logger
        )
        await #expect(throws: GatewayUnavailable.self) { try await broken.run() }
        #expect(try await fixture.count("federation_upload_key", where: "batch_tag IS NOT NULL") == 2)
        #expect(try await run.run()?.keysAccepted == 2)
        let sent = fixture.gateway.uploads.flatMap { $0.keys.map { Array($0.keyData) } }
        #expect(sent.count == 4 && Set(sent).count == 4, "every key reached the gateway exactly once")
    }

    @Test("two runs at once: one works, the other finds the lock taken")
    func exclusive() async throws {
        let fixture = try FederationFixture()
        try await fixture.insertUploadable(3)
        async let first = fixture.uploadRun { $0.minimumKeys = 1 }.run()
        async let second = fixture.uploadRun { $0.minimumKeys = 1 }.run()
        let outcomes = try await [first, second]
        let accepted = outcomes.compactMap { $0?.keysAccepted }.reduce(0, +)
        #expect(accepted == 3)
        #expect(fixture.gateway.uploads.flatMap(\.keys).count == 3)
    }
}

/// Passes the first upload to `inner`, then fails like an unreachable gateway.
final class FailingAfterFirst: FederationGateway, Sendable {
    let inner: ScriptedGateway
    private let calls = Mutexed(0)

    init(inner: ScriptedGateway) { self.inner = inner }

    func upload(_ batch: DiagnosisKeyBatch, tag: String, signature: String) async throws -> UploadAnswer {
        let call = self.calls.withLock { count -> Int in
            count += 1
            return count
        }
        guard call == 1 else { throw GatewayUnavailable(description: "connection refused") }
        return try await self.inner.upload(batch, tag: tag, signature: signature)
    }

    func download(day: String, tag: String?) async throws -> DownloadAnswer {
        try await self.inner.download(day: day, tag: tag)
    }
    func audit(day: String, tag: String) async throws -> [AuditEntry] { try await self.inner.audit(day: day, tag: tag) }
    func callbacks() async throws -> [CallbackRegistration] { try await self.inner.callbacks() }
    func registerCallback(id: String, url: String) async throws {
        try await self.inner.registerCallback(id: id, url: url)
    }
}
