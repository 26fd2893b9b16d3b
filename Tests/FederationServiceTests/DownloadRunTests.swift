// Download runs against the test's database and a scripted gateway (cwa-server §5.4): signatures checked per upload
// batch, the acceptance rules, DSOS → TRL, batch states and the date-based chain.

import ENFederation
import ENKeyStore
import ENModels
import ENTestSupport
import Foundation
import Testing

@testable import FederationService

@Suite("Download runs", .postgres(KeyStoreMigrations.group))
struct DownloadRunTests {
    static let day = FederationFixture.today

    /// A batch of `groups` (upload batches, each signed by its country) offered under `tag`.
    static func offer(
        _ fixture: FederationFixture,
        tag: String,
        next: String? = nil,
        _ groups: [(Country, [FederationDiagnosisKey])]
    ) throws {
        var batch = DiagnosisKeyBatch()
        batch.keys = groups.flatMap(\.1)
        let audit = try groups.map { try $0.0.auditEntry($0.1, at: fixture.clock.now) }
        fixture.gateway.offer(DownloadedBatch(tag: tag, nextTag: next, batch: batch), day: Self.day, audit: audit)
    }

    @Test("an announced batch is downloaded, verified and stored with TRL from DSOS and without consent")
    func storesVerifiedKeys() async throws {
        let fixture = try FederationFixture()
        let keys = FederationFixture.foreignKeys(3, origin: "FR", visited: [])
        try Self.offer(fixture, tag: "20261122-1", [(fixture.france, keys)])
        try await fixture.store.announce(tag: "20261122-1", day: Self.day)
        let outcome = try #require(try await fixture.downloadRun().run())
        #expect(outcome == DownloadOutcome(batchesProcessed: 1, keysStored: 3))
        #expect(try await fixture.count("diagnosis_key", where: "origin_country = 'FR'") == 3)
        #expect(
            try await fixture.count(
                "diagnosis_key",
                where: "transmission_risk_level = 8 AND NOT consent_to_federation AND visited_countries = ARRAY['FR']"
                    + " AND report_type = 'CONFIRMED_TEST' AND submission_type = 'SUBMISSION_TYPE_PCR_TEST'"
                    + " AND submission_timestamp = \(FederationFixture.currentHour)"
            ) == 3
        )
        #expect(try await fixture.count("federation_upload_key") == 0, "downloaded keys are never uploaded again")
        #expect(try await fixture.store.batches(.processed).map(\.tag) == ["20261122-1"])
        #expect(try #require(try await fixture.downloadRun().run()) == DownloadOutcome())
    }

    @Test(
        "batches that partners signed with openssl cms -sign (RSA PKCS#1 v1.5 as rsaEncryption, RSA-PSS, ECDSA) are stored whole"
    )
    func opensslSignedBatches() async throws {
        try #require(OpenSSL.isAvailable, "openssl signs the partners' batches")
        let pss = ["-keyopt", "rsa_padding_mode:pss"]
        let partners = [
            try Country("FR", algorithm: .rsa2048, opensslOptions: []),
            try Country("IT", algorithm: .rsa3072, opensslOptions: []),
            try Country("NL", algorithm: .rsa2048, opensslOptions: pss),
            try Country("BE", algorithm: .rsa3072, opensslOptions: pss),
            try Country("AT", algorithm: .p256, opensslOptions: []),
            try Country("PL", algorithm: .p384, opensslOptions: ["-md", "sha384"]),
            try Country("DK", algorithm: .rsa2048, opensslOptions: ["-stream"]),
            try Country("IE", algorithm: .p256, opensslOptions: ["-noattr", "-keyid"]),
        ]
        let fixture = try FederationFixture()
        let groups = partners.map { ($0, FederationFixture.foreignKeys(3, origin: $0.code, visited: [])) }
        try Self.offer(fixture, tag: "20261122-1", groups)
        try await fixture.store.announce(tag: "20261122-1", day: Self.day)
        let outcome = try #require(try await fixture.downloadRun(anchors: partners).run())
        #expect(outcome == DownloadOutcome(batchesProcessed: 1, keysStored: 3 * partners.count))
        for partner in partners {
            #expect(
                try await fixture.count("diagnosis_key", where: "origin_country = '\(partner.code)'") == 3,
                "\(partner.code): \(partner.certificate.algorithm) \(partner.opensslOptions ?? [])"
            )
        }
        #expect(try await fixture.store.batches(.processed).map(\.tag) == ["20261122-1"])
    }

    @Test("a signature over other keys refuses that upload batch and keeps the others")
    func tamperedGroup() async throws {
        let fixture = try FederationFixture()
        let italy = try Country("IT")
        let good = FederationFixture.foreignKeys(2, origin: "FR")
        var bad = FederationFixture.foreignKeys(2, origin: "IT")
        var batch = DiagnosisKeyBatch()
        let signedItaly = try italy.auditEntry(bad, at: fixture.clock.now)
        bad[0].daysSinceOnsetOfSymptoms = 3
        batch.keys = good + bad
        fixture.gateway.offer(
            DownloadedBatch(tag: "t1", nextTag: nil, batch: batch),
            day: Self.day,
            audit: [try fixture.france.auditEntry(good, at: fixture.clock.now), signedItaly]
        )
        try await fixture.store.announce(tag: "t1", day: Self.day)
        let outcome = try #require(try await fixture.downloadRun(anchors: [fixture.france, italy]).run())
        #expect(outcome.keysStored == 2)
        #expect(outcome.keysRefused == ["signature": 2])
        #expect(try await fixture.count("diagnosis_key", where: "origin_country = 'IT'") == 0)
        #expect(try await fixture.store.batches(.processedWithError).map(\.tag) == ["t1"])
    }

    @Test("keys of an untrusted signer, or claiming another origin than their signer's, are refused")
    func untrustedAndForeignOrigin() async throws {
        let fixture = try FederationFixture()
        let poland = try Country("PL")
        let claimingFrance = FederationFixture.foreignKeys(2, origin: "FR")
        let polish = FederationFixture.foreignKeys(1, origin: "PL")
        var batch = DiagnosisKeyBatch()
        batch.keys = claimingFrance + polish
        fixture.gateway.offer(
            DownloadedBatch(tag: "t2", nextTag: nil, batch: batch),
            day: Self.day,
            audit: [
                AuditEntry(
                    country: "PL",
                    amount: 2,
                    batchSignature: try poland.signer.sign(
                        BatchSignatureBytes.batch(of: claimingFrance),
                        at: fixture.clock.now
                    )
                ),
                try poland.auditEntry(polish, at: fixture.clock.now),
            ]
        )
        try await fixture.store.announce(tag: "t2", day: Self.day)
        // Poland is no trust anchor here: its signatures do not count.
        let outcome = try #require(try await fixture.downloadRun(anchors: [fixture.france]).run())
        #expect(outcome.keysStored == 0)
        #expect(outcome.keysRefused == ["signature": 3])
        #expect(try await fixture.count("diagnosis_key") == 0)
    }

    @Test("audit entries that do not add up to the batch fail it: ERROR, then ERROR_WONT_RETRY")
    func auditMismatch() async throws {
        let fixture = try FederationFixture()
        let keys = FederationFixture.foreignKeys(3, origin: "FR")
        var batch = DiagnosisKeyBatch()
        batch.keys = keys
        fixture.gateway.offer(
            DownloadedBatch(tag: "t3", nextTag: nil, batch: batch),
            day: Self.day,
            audit: [try fixture.france.auditEntry(Array(keys.prefix(2)), at: fixture.clock.now)]
        )
        try await fixture.store.announce(tag: "t3", day: Self.day)
        #expect(try await fixture.downloadRun().run() == DownloadOutcome(batchesFailed: 1))
        #expect(try await fixture.store.batches(.error).map(\.tag) == ["t3"])
        #expect(try await fixture.downloadRun().run() == DownloadOutcome(batchesFailed: 1))
        #expect(try await fixture.store.batches(.errorWontRetry).map(\.tag) == ["t3"])
        #expect(try await fixture.downloadRun().run() == DownloadOutcome())
        #expect(try await fixture.count("diagnosis_key") == 0)
    }

    @Test(
        "the acceptance rules refuse keys one by one",
        arguments: KeyAcceptance.Refusal.allCases.filter { $0 != .signature }
    )
    func acceptanceRules(_ refusal: KeyAcceptance.Refusal) async throws {
        let fixture = try FederationFixture()
        var keys = FederationFixture.foreignKeys(2, origin: "FR")
        switch refusal {
        case .reportType: keys[0].reportType = .selfReport
        case .keyData: keys[0].keyData = Data(FederationFixture.random(15))
        case .rollingStart: keys[0].rollingStartIntervalNumber += 1
        case .rollingPeriod: keys[0].rollingPeriod = 145
        case .daysSinceOnset: keys[0].daysSinceOnsetOfSymptoms = 4001
        case .origin:
            // Signed by its own (trusted) certificate, but not an ISO 3166 country.
            keys = FederationFixture.foreignKeys(2, origin: "EU")
        case .visitedCountries: keys[0].visitedCountries = ["XX"]
        case .signature: break
        }
        let signer = refusal == .origin ? try Country("EU") : fixture.france
        try Self.offer(fixture, tag: "r", [(signer, keys)])
        try await fixture.store.announce(tag: "r", day: Self.day)
        let outcome = try #require(try await fixture.downloadRun(anchors: [fixture.france, signer]).run())
        let refused = refusal == .origin ? 2 : 1
        #expect(outcome.keysRefused == [refusal.rawValue: refused])
        #expect(outcome.keysStored == 2 - refused)
    }

    @Test("date-based: the day's first batch and its nextBatchTag chain are processed in one run")
    func dateBasedChain() async throws {
        let fixture = try FederationFixture()
        try Self.offer(
            fixture,
            tag: "d-1",
            next: "d-2",
            [(fixture.france, FederationFixture.foreignKeys(2, origin: "FR"))]
        )
        try Self.offer(
            fixture,
            tag: "d-2",
            next: "d-3",
            [(fixture.france, FederationFixture.foreignKeys(2, origin: "FR"))]
        )
        try Self.offer(
            fixture,
            tag: "d-3",
            next: nil,
            [(fixture.france, FederationFixture.foreignKeys(1, origin: "FR"))]
        )
        let outcome = try #require(try await fixture.downloadRun { $0.dateBased = true }.run())
        #expect(outcome == DownloadOutcome(batchesProcessed: 3, keysStored: 5))
        #expect(Set(try await fixture.store.batches(.processed).map(\.tag)) == ["d-1", "d-2", "d-3"])
        // Callback mode does not follow the chain.
        let other = try FederationFixture()
        try Self.offer(other, tag: "c-1", next: "c-2", [(other.france, FederationFixture.foreignKeys(1, origin: "FR"))])
        try Self.offer(other, tag: "c-2", next: nil, [(other.france, FederationFixture.foreignKeys(1, origin: "FR"))])
        try await other.store.announce(tag: "c-1", day: Self.day)
        #expect(try await other.downloadRun().run()?.batchesProcessed == 1)
    }

    @Test("a key already stored as a PCR key is not stored again")
    func duplicates() async throws {
        let fixture = try FederationFixture()
        let keys = FederationFixture.foreignKeys(2, origin: "FR")
        try Self.offer(fixture, tag: "x-1", [(fixture.france, keys)])
        try Self.offer(fixture, tag: "x-2", [(fixture.france, keys)])
        try await fixture.store.announce(tag: "x-1", day: Self.day)
        try await fixture.store.announce(tag: "x-2", day: Self.day)
        let outcome = try #require(try await fixture.downloadRun().run())
        #expect(outcome.keysStored == 2)
        #expect(outcome.batchesProcessed == 2)
        #expect(try await fixture.count("diagnosis_key") == 2)
    }
}
