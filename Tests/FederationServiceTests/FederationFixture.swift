// One test's federation: the runs on the test's own database, a scripted gateway, signing certificates of two
// countries, and keys inserted as submission stores them.

import ENFederation
import ENKeyStore
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import Logging
import MetricsTestKit
import NIOCore
import PostgresNIO
import Synchronization
import Testing

@testable import FederationService

/// A gateway whose answers the test decides, recording what it was sent. Uploads are checked for a valid signature
/// over exactly the keys sent, as the real gateway checks them.
final class ScriptedGateway: FederationGateway, Sendable {
    struct Upload: Sendable {
        var tag: String
        var signature: String
        var keys: [FederationDiagnosisKey]
    }

    private struct State {
        var uploads: [Upload] = []
        var uploadAnswers: [UploadAnswer] = []
        var uploadFailure: (any Error & Sendable)?
        var batches: [String: DownloadedBatch] = [:]
        var firstOfDay: [String: String] = [:]
        var audits: [String: [AuditEntry]] = [:]
        var downloads: [String] = []
        var callbacks: [CallbackRegistration] = []
    }

    private let state = Mutex(State())

    var uploads: [Upload] { self.state.withLock { $0.uploads } }
    var downloads: [String] { self.state.withLock { $0.downloads } }
    var registrations: [CallbackRegistration] { self.state.withLock { $0.callbacks } }

    /// The answers to the next uploads, in order; `.created` once they run out.
    func answerUploads(_ answers: [UploadAnswer]) { self.state.withLock { $0.uploadAnswers = answers } }
    /// Every upload fails with `error` (the gateway unreachable) until set to `nil`.
    func failUploads(_ error: (any Error & Sendable)?) { self.state.withLock { $0.uploadFailure = error } }

    /// Offers a batch for download, with its audit entries; the first offered for a day is that day's first.
    func offer(_ batch: DownloadedBatch, day: String, audit: [AuditEntry]) {
        self.state.withLock { state in
            state.batches[batch.tag] = batch
            state.audits[batch.tag] = audit
            if state.firstOfDay[day] == nil { state.firstOfDay[day] = batch.tag }
        }
    }

    func upload(_ batch: DiagnosisKeyBatch, tag: String, signature: String) async throws -> UploadAnswer {
        try self.state.withLock { state in
            if let failure = state.uploadFailure { throw failure }
            state.uploads.append(Upload(tag: tag, signature: signature, keys: batch.keys))
            return state.uploadAnswers.isEmpty ? .created : state.uploadAnswers.removeFirst()
        }
    }

    func download(day: String, tag: String?) async throws -> DownloadAnswer {
        self.state.withLock { state in
            state.downloads.append(tag ?? "first:\(day)")
            guard let tag = tag ?? state.firstOfDay[day], let batch = state.batches[tag] else { return .notFound }
            return .batch(batch)
        }
    }

    func audit(day: String, tag: String) async throws -> [AuditEntry] {
        self.state.withLock { $0.audits[tag] ?? [] }
    }

    func callbacks() async throws -> [CallbackRegistration] { self.registrations }

    func registerCallback(id: String, url: String) async throws {
        self.state.withLock { state in
            state.callbacks.removeAll { $0.callbackId == id }
            state.callbacks.append(CallbackRegistration(callbackId: id, url: url))
        }
    }
}

/// A country's batch-signing identity.
struct Country: Sendable {
    let code: String
    let certificate: TestSigningCertificate
    let signer: BatchSigner
    /// When set, batches are signed by `openssl cms -sign` with these options instead of by `BatchSigner`.
    let opensslOptions: [String]?

    init(_ code: String, algorithm: TestSigningCertificate.Algorithm = .p256, opensslOptions: [String]? = nil) throws {
        self.code = code
        self.opensslOptions = opensslOptions
        // Valid around the fixture's clock (days before the real time) and the real time alike.
        self.certificate = try TestSigningCertificate.make(
            country: code,
            algorithm: algorithm,
            notValidBefore: FederationFixture.start.addingTimeInterval(-86_400),
            lifetime: 365 * 86_400
        )
        self.signer = try BatchSigner(
            certificatePEM: self.certificate.certificatePEM,
            privateKeyPEM: self.certificate.privateKeyPEM
        )
    }

    /// The audit entry of an upload batch of `keys`, signed by this country.
    func auditEntry(_ keys: [FederationDiagnosisKey], at time: Date) throws -> AuditEntry {
        let bytes = BatchSignatureBytes.batch(of: keys)
        let signature =
            if let options = self.opensslOptions {
                try OpenSSL.cmsSign(
                    bytes,
                    certificatePEM: self.certificate.certificatePEM,
                    privateKeyPEM: self.certificate.privateKeyPEM,
                    options: options
                )
            } else {
                try self.signer.sign(bytes, at: time)
            }
        return AuditEntry(country: self.code, amount: keys.count, batchSignature: signature)
    }
}

struct FederationFixture: Sendable {
    /// 2026-11-22 10:25 UTC.
    static let start = Date(timeIntervalSince1970: 1_795_343_100)
    static let today = "2026-11-22"
    /// The hour of `start`, in hours since the epoch.
    static let currentHour: Int64 = 20_779 * 24 + 10

    let database: PostgresTestDatabase
    let store: PostgresFederationRepository
    let gateway = ScriptedGateway()
    let clock = ManualClock(Self.start)
    let metrics = TestMetrics()
    let germany: Country
    let france: Country

    init() throws {
        self.database = try PostgresTestDatabase.require()
        self.store = PostgresFederationRepository(client: self.database.client, logger: self.database.logger)
        self.germany = try Country("DE")
        self.france = try Country("FR")
    }

    func uploadRun(_ change: (inout UploadPolicy) -> Void = { _ in }) -> UploadRun {
        var policy = UploadPolicy()
        change(&policy)
        return UploadRun(
            store: self.store,
            gateway: self.gateway,
            signer: self.germany.signer,
            policy: policy,
            clock: self.clock.wallClock,
            metrics: FederationMetrics(factory: self.metrics),
            logger: self.database.logger
        )
    }

    func downloadRun(anchors: [Country]? = nil, _ change: (inout DownloadPolicy) -> Void = { _ in }) -> DownloadRun {
        var policy = DownloadPolicy()
        change(&policy)
        let anchors = BatchTrustAnchor.registeredBySubject((anchors ?? [self.france]).map(\.certificate.certificate))
        return DownloadRun(
            store: self.store,
            keys: PostgresDiagnosisKeyRepository(client: self.database.client, logger: self.database.logger),
            gateway: self.gateway,
            acceptance: KeyAcceptance(),
            verification: BatchVerification(verifier: BatchSignatureVerifier(anchors: anchors ?? []), ownCountry: "DE"),
            policy: policy,
            clock: self.clock.wallClock,
            metrics: FederationMetrics(factory: self.metrics),
            logger: self.database.logger
        )
    }

    static func random(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255) }
    }

    /// Inserts `count` PCR keys from DE with consent, as submission stores them, submitted `hoursAgo` before now; each
    /// was valid for a day that ended a day before (or from `rollingStart`), so the expiry policy lets it go at once.
    @discardableResult
    func insertUploadable(
        _ count: Int,
        hoursAgo: Int64 = 1,
        consent: Bool = true,
        rollingStart: Int32? = nil
    ) async throws -> [[UInt8]] {
        let keys = (0..<count).map { _ in Self.random(16) }
        let hour = Self.currentHour - hoursAgo
        let rollingStart = rollingStart ?? Int32((hour / 24 - 2) * 144)
        try await self.database.storeKeys(
            .pcr(
                keys,
                hour: hour,
                rollingStart: rollingStart,
                daysSinceOnset: 2,
                visited: ["DE", "FR"],
                consent: consent
            )
        )
        return keys
    }

    /// Keys of `origin` as the gateway hands them out: valid yesterday, DSOS 0 (TRL 8 by the map).
    static func foreignKeys(_ count: Int, origin: String, visited: [String] = ["DE"]) -> [FederationDiagnosisKey] {
        (0..<count).map { _ in
            var key = FederationDiagnosisKey()
            key.keyData = Data(Self.random(16))
            key.rollingStartIntervalNumber = UInt32((Self.currentHour / 24 - 1) * 144)
            key.rollingPeriod = 144
            key.transmissionRiskLevel = 3
            key.visitedCountries = visited
            key.origin = origin
            key.reportType = .confirmedTest
            key.daysSinceOnsetOfSymptoms = 0
            return key
        }
    }

    func count(_ table: String, where condition: String = "true") async throws -> Int {
        try await self.database.count(table, where: condition)
    }
}
