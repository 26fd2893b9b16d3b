// The real binary in both modes, and a whole run published to a real S3-protocol server (moto).

import AsyncHTTPClient
import Crypto
import ENCrypto
import ENKeyStore
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import Logging
import MetricsTestKit
import NIOCore
import NIOHTTP1
import PostgresNIO
import Testing

@testable import DistributionService

@Suite("distribution-service process", .postgres(KeyStoreMigrations.group))
struct DistributionProcessTests {
    @Test("publish availability: the two availability documents now, signed, and nothing else; without NHS exit 2")
    func publishAvailability() async throws {
        let database = try PostgresTestDatabase.require()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "distribution-pa-\(UUID().uuidString)"
        )
        try await withCleanup {
            let environment = try Self.environment(database, folder: folder).merging(TestNHS.settings()) { _, new in new
            }
            let root = folder.appendingPathComponent("cdn")
            #expect(try await Self.exitCode(["publish", "availability"], environment) == 0)
            for name in NHSDocuments.availability {
                let file = try Data(contentsOf: root.appendingPathComponent("distribution/\(name)"))
                let (signature, body) = try #require(DirectoryStore.signedFile([UInt8](file)))
                #expect(throws: Never.self) {
                    try TestNHS.verifier.verifyFile(signature: signature.value, date: signature.date, body: body)
                }
            }
            #expect(
                !FileManager.default.fileExists(atPath: root.appendingPathComponent("distribution/self-isolation").path)
            )
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("version").path), "no key run")

            #expect(
                try await Self.exitCode(["publish", "availability"], Self.environment(database, folder: folder)) == 2
            )
            #expect(try await Self.exitCode(["publish", "everything"], environment) == 2)
        } cleanup: {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// The exit code of the binary run with `arguments` in `environment` (killed if the test ends first).
    static func exitCode(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        let process = try ServiceProcess.start(
            BuiltProduct.url("distribution-service"),
            arguments: arguments,
            environment: environment
        )
        defer { process.kill() }
        return try await process.waitForExit()
    }

    /// The environment of the binary: the test's database, a fresh signing key and CDN folder under `folder`.
    static func environment(_ database: PostgresTestDatabase, folder: URL) throws -> [String: String] {
        let key = folder.appendingPathComponent("signing.pem")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try P256.Signing.PrivateKey().pemRepresentation.write(to: key, atomically: true, encoding: .utf8)
        var environment = database.processEnvironment
        environment["SIGNING_KEY_FILES"] = key.path
        environment["CDN_DIRECTORY"] = folder.appendingPathComponent("cdn").path
        return environment
    }

    @Test(
        "audit: exit 0 on the tree a run wrote; 1 with the missing keys named when a listed archive is gone; 2 for a bad --at"
    )
    func auditCommand() async throws {
        let database = try PostgresTestDatabase.require()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "distribution-audit-\(UUID().uuidString)"
        )
        try await withCleanup {
            var environment = try Self.environment(database, folder: folder)
            environment["SHIFTING_POLICY_THRESHOLD"] = "1"
            // Three keys submitted two hours ago, each valid for a day that ended a day before.
            let hour = Int64(Date().timeIntervalSince1970) / 3600 - 2
            let submitted = (1...3).map { [UInt8](repeating: $0, count: 16) }
            try await database.storeKeys(.pcr(submitted, hour: hour, rollingStart: Int32((hour - 48) * 6)))
            #expect(try await Self.exitCode(["run"], environment) == 0)
            let audit = try ServiceProcess.start(
                BuiltProduct.url("distribution-service"),
                arguments: ["audit"],
                environment: environment
            )
            defer { audit.kill() }
            #expect(try await audit.waitForExit() == 0)
            #expect(audit.output.contains("audit: DE: 3 keys due, 3 in "), "\(audit.output)")
            #expect(audit.output.contains("audit: 0 missing"))

            // The hour archive and the day archive holding the keys go: the audit names them and their period.
            let day = hour / 24
            let date = DistributionTime.isoDate(day: day)
            let keys = folder.appendingPathComponent("cdn/version/v1/diagnosis-keys/country/DE/date/\(date)")
            try FileManager.default.removeItem(at: keys.appendingPathComponent("hour/\(hour - day * 24)"))
            try? FileManager.default.removeItem(at: keys.appendingPathComponent("index"))
            let missing = try ServiceProcess.start(
                BuiltProduct.url("distribution-service"),
                arguments: ["audit"],
                environment: environment
            )
            defer { missing.kill() }
            #expect(try await missing.waitForExit() == 1)
            #expect(
                missing.output.contains("audit: DE \(date) hour \(hour - day * 24): 3 missing (origin DE 3)"),
                "\(missing.output)"
            )
            #expect(missing.output.contains("audit: 3 missing"), "EUR still holds them")

            #expect(try await Self.exitCode(["audit", "--at", "yesterday"], environment) == 2)
            // Settings given as flags reach the service's settings, in any order with --at.
            var flagged = environment
            let cdn = try #require(environment["CDN_DIRECTORY"])
            flagged["CDN_DIRECTORY"] = nil
            #expect(try await Self.exitCode(["audit", "--cdn-directory", cdn], flagged) == 1, "the same 3 missing")
            let at = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(hour + 1) * 3600))
            #expect(try await Self.exitCode(["audit", "--cdn-directory", cdn, "--at", at], flagged) != 2)
            #expect(try await Self.exitCode(["audit", "--at", at, "--cdn-directory", cdn], flagged) != 2)
        } cleanup: {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    @Test("run: one run, exit 0, the tree on disk; serve: a run at start, ready, metrics, SIGTERM exits 0")
    func modes() async throws {
        let database = try PostgresTestDatabase.require()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "distribution-process-\(UUID().uuidString)"
        )
        try await withCleanup {
            let environment = try Self.environment(database, folder: folder)
            let root = folder.appendingPathComponent("cdn").path

            let once = try ServiceProcess.start(
                BuiltProduct.url("distribution-service"),
                arguments: ["run"],
                environment: environment
            )
            defer { once.kill() }
            #expect(try await once.waitForExit() == 0)
            #expect(once.output.contains("Distribution run completed"))
            #expect(FileManager.default.fileExists(atPath: root + "/version/v1/diagnosis-keys/country/index"))
            #expect(FileManager.default.fileExists(atPath: root + "/version/v2/app_config_android"))

            let served = try ServiceProcess.start(
                BuiltProduct.url("distribution-service"),
                arguments: ["serve"],
                environment: environment
            )
            defer { served.kill() }
            let port = try await served.waitForPort(listener: "app")
            let counted = try await Poll.until(every: .milliseconds(50), attempts: 100) {
                try await HTTP.get("http://127.0.0.1:\(port)/metrics").body.contains(
                    #"en_distribution_runs_total{outcome="completed"} 1"#
                )
            }
            #expect(counted)
            #expect(try await HTTP.get("http://127.0.0.1:\(port)/health/ready").status == 200)
            served.signal(SIGTERM)
            #expect(try await served.waitForExit() == 0)

            let usage = try ServiceProcess.start(
                BuiltProduct.url("distribution-service"),
                arguments: [],
                environment: environment
            )
            #expect(try await usage.waitForExit() == 2)
            #expect(usage.output.contains("usage: distribution-service run|serve"))
        } cleanup: {
            try? FileManager.default.removeItem(at: folder)
        }
    }
}

@Suite(
    "Distribution to S3",
    .postgres(KeyStoreMigrations.group),
    .enabled(if: MotoServer.isAvailable, "moto server (python3 -m moto.server) is not installed")
)
struct DistributionToS3Tests {
    /// A fresh moto server with the bucket `cwa`, a store on it (public-read objects with `publicRead`), and an HTTP
    /// client; all end afterwards.
    static func withBucket(
        publicRead: Bool = false,
        _ body: (S3ObjectStore, HTTPClient, MotoServer) async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        try await withCleanup {
            let moto = try await MotoServer.start()
            try await withCleanup {
                try await moto.createBucket("cwa", client: client)
                let store = S3ObjectStore(
                    configuration: S3Configuration(
                        endpoint: moto.endpoint,
                        bucket: "cwa",
                        region: "us-east-1",
                        accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                        secretAccessKey: "moto-takes-any-secret",
                        publicReadACL: publicRead,
                        requestTimeout: .seconds(30)
                    ),
                    httpClient: client,
                    logger: database.logger
                )
                try await body(store, client, moto)
            } cleanup: {
                await moto.stop()
            }
        } cleanup: {
            try await client.shutdown()
        }
    }

    @Test("with NHS_ENABLED the documents reach the bucket with the signature as user metadata, served as headers")
    func nhsDocumentsToBucket() async throws {
        let database = try PostgresTestDatabase.require()
        try await Self.withBucket(publicRead: true) { store, client, moto in
            try await DistributionFixture.with(settings: TestNHS.settings()) { fixture in
                let run = DistributionRun(
                    configuration: fixture.configuration,
                    keys: PostgresDiagnosisKeyRepository(client: database.client, logger: database.logger),
                    store: store,
                    clock: fixture.clock.wallClock,
                    metrics: DistributionMetrics(factory: TestMetrics()),
                    logger: database.logger
                )
                _ = try #require(try await run.run())
                let response = try await client.execute(
                    HTTPClientRequest(url: "\(moto.endpoint)/cwa/distribution/availability-android"),
                    timeout: .seconds(10)
                )
                let body = Array(try await response.body.collect(upTo: 1 << 20).readableBytesView)
                #expect(response.status == .ok)
                #expect(throws: Never.self) {
                    try TestNHS.verifier.verifyFile(
                        signature: response.headers.first(name: "x-amz-meta-signature"),
                        date: response.headers.first(name: "x-amz-meta-signature-date"),
                        body: body
                    )
                }
                let second = try #require(try await run.run())
                #expect(second.publish.uploaded == 0, "unchanged documents are not uploaded again")
            }
        }
    }

    @Test("a run publishes the tree to the bucket; the next run uploads nothing, since nothing changed")
    func runToBucket() async throws {
        let database = try PostgresTestDatabase.require()
        try await Self.withBucket { store, _, _ in
            try await DistributionFixture.with { fixture in
                // Keys of yesterday's 3 o'clock hour, expired long before they were submitted.
                _ = try await fixture.insertKeys(150, hour: (DistributionFixture.today - 1) * 24 + 3)
                let run = DistributionRun(
                    configuration: fixture.configuration,
                    keys: PostgresDiagnosisKeyRepository(client: database.client, logger: database.logger),
                    store: store,
                    clock: fixture.clock.wallClock,
                    metrics: DistributionMetrics(factory: TestMetrics()),
                    logger: database.logger
                )
                let first = try #require(try await run.run())
                let keys = try await store.list(prefix: "version")
                #expect(keys.contains("version"))
                #expect(keys.contains("version/v1/diagnosis-keys/country/DE/date/2026-11-21"))
                #expect(keys.contains("version/v1/diagnosis-keys/country/DE/date/2026-11-21/hour/3"))
                #expect(!keys.contains { $0.hasSuffix("/index") })
                #expect(first.publish.uploaded == keys.count)
                let dayChecksum = try await store.checksum(
                    of: "version/v1/diagnosis-keys/country/DE/date/2026-11-21"
                )
                #expect(dayChecksum?.count == 32)

                let second = try #require(try await run.run())
                #expect(second.publish.uploaded == 0)
                // Only the app configurations: published key files are not rebuilt.
                #expect(second.archivesBuilt == 4)
            }
        }
    }
}
