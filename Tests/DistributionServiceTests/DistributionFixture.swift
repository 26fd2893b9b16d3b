// One test's distribution: a configuration on the test's own database, a signing key in a temporary folder, the CDN
// folder a run publishes into, rows inserted as submission stores them, and the published tree read back.

import Crypto
import ENKeyStore
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import MetricsTestKit
import NIOCore
import PostgresNIO
import SwiftProtobuf
import Testing

@testable import DistributionService

/// Runs against the current test's database (the `.postgres` trait) and a fresh temporary folder; the clock starts
/// at `start`, and every run is a real `DistributionRun` into `root` through a `DirectoryStore`.
struct DistributionFixture: Sendable {
    /// 2026-11-22 10:25 UTC.
    static let start = Date(timeIntervalSince1970: 1_795_343_100)
    /// The day of `start` (2026-11-22), in days since the epoch.
    static let today: Int64 = 20_779
    /// The hour of `start` (10:00 of `today`), in hours since the epoch.
    static let currentHour: Int64 = 20_779 * 24 + 10
    /// The folder of both published key folders, DE and EUR.
    static let keyFolder = "version/v1/diagnosis-keys/country"

    let database: PostgresTestDatabase
    /// The temporary folder holding the key file and the tree; removed after the test.
    let folder: URL
    /// The CDN tree (`CDN_DIRECTORY`).
    let root: URL
    let clock: ManualClock
    let metrics: TestMetrics
    let configuration: DistributionConfiguration
    /// The public half of the signing key, all a phone has to check an archive with.
    let publicKey: P256.Signing.PublicKey

    /// Runs `body` with a fixture whose policy `change` adjusted, then removes the temporary folder.
    static func with(
        policy change: (inout KeyDistributionPolicy) -> Void = { _ in },
        settings extra: [String: String] = [:],
        _ body: (DistributionFixture) async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("distribution-\(UUID().uuidString)")
        try await withCleanup {
            let fixture = try Self.make(database: database, folder: folder, policy: change, settings: extra)
            try await body(fixture)
        } cleanup: {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// Writes the signing key and reads the configuration as the binary would, from settings.
    private static func make(
        database: PostgresTestDatabase,
        folder: URL,
        policy change: (inout KeyDistributionPolicy) -> Void,
        settings extra: [String: String]
    ) throws -> DistributionFixture {
        let root = folder.appendingPathComponent("cdn")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let signingKey = P256.Signing.PrivateKey()
        let keyFile = folder.appendingPathComponent("signing-key.pem")
        try signingKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)

        var values = database.processEnvironment
        values["SIGNING_KEY_FILES"] = keyFile.path
        values["CDN_DIRECTORY"] = root.path
        values["PUBLISH_RETRY_BACKOFF"] = "1ms"
        values.merge(extra) { _, new in new }
        let settings = SettingsReader(values: values)
        var configuration = DistributionConfiguration(settings: settings)
        try settings.finish()
        change(&configuration.policy)

        return DistributionFixture(
            database: database,
            folder: folder,
            root: root,
            clock: ManualClock(Self.start),
            metrics: TestMetrics(),
            configuration: configuration,
            publicKey: try P256.Signing.PublicKey(pemRepresentation: signingKey.publicKey.pemRepresentation)
        )
    }

    /// The store the runs publish through.
    var store: DirectoryStore { DirectoryStore(root: self.root) }

    // MARK: - Runs

    /// One run at the clock's time (through `store`, the fixture's by default): its report, or `nil` when another run
    /// holds the lock.
    @discardableResult
    func run(store: (any ObjectStore)? = nil) async throws -> RunReport? {
        try await DistributionRun(
            configuration: self.configuration,
            keys: PostgresDiagnosisKeyRepository(client: self.database.client, logger: self.database.logger),
            store: store ?? self.store,
            clock: self.clock.wallClock,
            metrics: DistributionMetrics(factory: self.metrics),
            logger: self.database.logger
        ).run()
    }

    /// One run that must find the lock free and complete.
    @discardableResult
    func completedRun(sourceLocation: SourceLocation = #_sourceLocation) async throws -> RunReport {
        let report = try await self.run()
        return try #require(report, "the run found the lock taken", sourceLocation: sourceLocation)
    }

    // MARK: - Rows

    /// `count` random bytes; the first is `lead` when given.
    static func random(_ count: Int, lead: UInt8? = nil) -> [UInt8] {
        var bytes = (0..<count).map { _ in UInt8.random(in: 0...255) }
        if let lead { bytes[0] = lead }
        return bytes
    }

    /// Inserts `count` random keys submitted in `hour` (see `insert(keys:hour:trl:consent:)`); returns their `key_data`.
    @discardableResult
    func insertKeys(_ count: Int, hour: Int64, trl: Int32 = 6, consent: Bool = false) async throws -> [[UInt8]] {
        let keys = (0..<count).map { _ in Self.random(16) }
        try await self.insert(keys: keys, hour: hour, trl: trl, consent: consent)
        return keys
    }

    /// Inserts keys as submission stores a PCR submission from DE that visited FR, submitted in `hour` (hours since the
    /// epoch). Each key was valid for a whole day that ended 24 hours before the submission hour, so the expiry policy
    /// never holds it back: it is distributable in its submission hour.
    /// `rollingStart` moves the keys' validity (in ten-minute intervals since the epoch).
    func insert(
        keys: [[UInt8]],
        hour: Int64,
        trl: Int32 = 6,
        consent: Bool = false,
        rollingStart: Int32? = nil
    ) async throws {
        let rollingStart = rollingStart ?? Int32(hour * 6 - 288)
        try await self.database.storeKeys(
            .pcr(keys, hour: hour, rollingStart: rollingStart, trl: trl, visited: ["DE", "FR"], consent: consent)
        )
    }

    /// Inserts an encrypted check-in report submitted in `hour`; every byte string starts with `lead`, the rest is random.
    @discardableResult
    func insertCheckInReport(hour: Int64, lead: UInt8? = nil) async throws -> StoredCheckInReport {
        let report = StoredCheckInReport(
            locationIDHash: Self.random(32, lead: lead),
            initializationVector: Self.random(16, lead: lead),
            encryptedCheckInRecord: Self.random(16, lead: lead),
            mac: Self.random(32, lead: lead),
            submissionHour: hour
        )
        try await self.database.client.query(
            """
            INSERT INTO check_in_protected_reports (
                trace_location_id_hash, initialization_vector, encrypted_check_in_record, mac, submission_timestamp
            ) VALUES (\(ByteBuffer(bytes: report.locationIDHash)), \(ByteBuffer(bytes: report.initializationVector)),
                    \(ByteBuffer(bytes: report.encryptedCheckInRecord)), \(ByteBuffer(bytes: report.mac)), \(hour))
            """,
            logger: self.database.logger
        )
        return report
    }

    /// Inserts an unencrypted check-in (v1 trace warning) submitted in `hour`, at a random location starting with `lead`.
    @discardableResult
    func insertTraceWarning(
        hour: Int64,
        start: UInt32,
        period: UInt32 = 6,
        trl: UInt32 = 5,
        lead: UInt8? = nil
    ) async throws -> StoredTraceWarning {
        let warning = StoredTraceWarning(
            locationIDHash: Self.random(32, lead: lead),
            startIntervalNumber: start,
            period: period,
            transmissionRiskLevel: trl,
            submissionHour: hour
        )
        try await self.database.client.query(
            """
            INSERT INTO trace_time_interval_warning (
                trace_location_id, start_interval_number, period, transmission_risk_level, submission_timestamp, submission_type
            ) VALUES (
                \(ByteBuffer(bytes: warning.locationIDHash)), \(Int32(start)), \(Int32(period)), \(Int32(trl)), \(hour),
                'SUBMISSION_TYPE_PCR_TEST'
            )
            """,
            logger: self.database.logger
        )
        return warning
    }

    // MARK: - The published tree

    /// The file holding the object `key`, as the gateway serves it: `<key>`, or `<key>/index` when the key is also a
    /// folder; `nil` when there is neither.
    func path(of key: String) -> String? {
        self.store.existingFile(for: key)
    }

    /// Whether the object `key` is published.
    func exists(_ key: String) -> Bool {
        self.path(of: key) != nil
    }

    /// The bytes of the object `key`.
    func bytes(_ key: String) -> [UInt8]? {
        guard let path = self.path(of: key), let data = FileManager.default.contents(atPath: path) else { return nil }
        return [UInt8](data)
    }

    /// The object `key` as text (the JSON indexes).
    func text(_ key: String) -> String? {
        self.bytes(key).map { String(decoding: $0, as: UTF8.self) }
    }

    /// When the file of the object `key` was last written.
    func modificationDate(_ key: String) throws -> Date? {
        guard let path = self.path(of: key) else { return nil }
        return try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
    }

    /// `export.bin` and `export.sig` of the archive `key`, which must hold exactly these two entries, in this order.
    func archive(
        _ key: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (bin: [UInt8], sig: [UInt8]) {
        let body = try #require(self.bytes(key), "\(key) is not published", sourceLocation: sourceLocation)
        let entries = try ZipArchive.entries(of: body)
        try #require(
            entries.map(\.name) == [ExportFile.contentEntry, ExportFile.signatureEntry],
            "\(key) holds \(entries.map(\.name))",
            sourceLocation: sourceLocation
        )
        return (entries[0].data, entries[1].data)
    }

    /// The key export of the archive `key`, after checking the 16-byte header that only key exports carry.
    func keyExport(
        _ key: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> TemporaryExposureKeyExport {
        let bin = try self.archive(key, sourceLocation: sourceLocation).bin
        #expect(
            Array(bin.prefix(16)) == ExportFile.header,
            "\(key) lacks the export header",
            sourceLocation: sourceLocation
        )
        return try TemporaryExposureKeyExport(serializedBytes: Array(bin.dropFirst(16)))
    }

    /// Whether `sig` holds exactly one signature, over all of `bin`, that this test's public key verifies.
    func isSigned(_ bin: [UInt8], _ sig: [UInt8]) throws -> Bool {
        let list = try TEKSignatureList(serializedBytes: sig)
        guard list.signatures.count == 1 else { return false }
        let signature = try P256.Signing.ECDSASignature(derRepresentation: list.signatures[0].signature)
        return self.publicKey.isValidSignature(signature, for: bin)
    }

    // MARK: - Files by path

    /// Writes `text` at `root/path` (a file path, `…/index` included), as an earlier run could have left it.
    func writeFile(_ path: String, _ text: String = "stale") throws {
        let url = self.root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    /// Whether anything (file or folder) is at `root/path`.
    func fileExists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: self.root.appendingPathComponent(path).path)
    }

    /// The text of the file at `root/path`.
    func fileText(_ path: String) -> String? {
        FileManager.default.contents(atPath: self.root.appendingPathComponent(path).path).map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    /// A JSON array of the hours in `range`, as an hour index lists them.
    static func hours(_ range: ClosedRange<Int>) -> String {
        "[" + range.map(String.init).joined(separator: ",") + "]"
    }
}
