// The NHS app's keys end to end: submitted through the route with every transmission risk level the app may send
// (0…7: nhsx/covid19-app-system-public, doc/architecture/api-contracts/diagnosis-key-submission.md), stored in
// PostgreSQL, and found in the archives a distribution run publishes.

import Crypto
import ENCrypto
import ENKeyStore
import ENModels
import ENNHS
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MetricsTestKit
import NIOCore
import SwiftProtobuf
import Testing

@testable import DistributionService
@testable import SubmissionService

@Suite("NHS keys published", .postgres(KeyStoreMigrations.group))
struct NHSKeysPublishedTests {
    @Test(
        "keys of every NHS transmission risk 0…7 are published, at the CWA scale (NHS + 1), with the CWA app's below the minimum left out"
    )
    func everyTransmissionRiskPublished() async throws {
        let database = try PostgresTestDatabase.require()
        let now = Date()
        let keys = PostgresDiagnosisKeyRepository(client: database.client, logger: database.logger)

        // The NHS app submits eight keys of eight days before yesterday, one per transmission risk level.
        let verifier = InMemoryVerificationClient()
        let token = UUID().uuidString.lowercased()
        await verifier.issueNHS(token, kit: .labResult)
        var dependencies = SubmissionDependencies.inMemory(verifier: verifier, keys: keys, clock: WallClock { now })
        dependencies.apiKeys = NHSAPIKeyVerifier(store: TestNHS.keyStore())
        let runtime = SubmissionRuntime(
            configuration: try SubmissionConfiguration.load(
                from: SettingsReader(values: TestSettings.submission(TestNHS.settings()))
            ),
            dependencies: dependencies,
            environment: .testing()
        )
        let app = Application(router: try Submission.buildRouter(runtime))
        let today = Int(now.timeIntervalSince1970) / 600 / 144 * 144
        let submitted: [(key: [UInt8], trl: Int)] = (0..<8).map { trl in
            ((0..<16).map { _ in UInt8.random(in: 0...255) }, trl)
        }
        let entries: [[String: Any]] = submitted.enumerated().map { day, entry in
            [
                // Keys of days that ended at least a day ago: the expiry policy holds none back.
                "key": Data(entry.key).base64EncodedString(), "rollingStartNumber": today - 144 * (day + 2),
                "rollingPeriod": 144, "transmissionRiskLevel": entry.trl,
            ]
        }
        let body = try JSONSerialization.data(
            withJSONObject: ["diagnosisKeySubmissionToken": token, "temporaryExposureKeys": entries]
        )
        let reply = try await app.post(
            "/submission/diagnosis-keys",
            headers: [
                .contentType: "application/json", .authorization: TestNHS.mobile.authorization,
                .nhsRequestID: "trl-0-7",
            ],
            body: ByteBuffer(bytes: body)
        )
        #expect(reply.status == .ok)
        // A CWA app's key below MINIMUM_TRL_VALUE_ALLOWED (3), for contrast: stored, never published.
        let lowCWAKey = (0..<16).map { _ in UInt8.random(in: 0...255) }
        _ = try await keys.store(
            KeySubmission(
                submissionType: "SUBMISSION_TYPE_PCR_TEST",
                originCountry: "DE",
                visitedCountries: ["DE"],
                consentToFederation: false,
                submissionHour: EpochIntervals.hour(now),
                keys: [
                    DiagnosisKeyRow(
                        keyData: lowCWAKey,
                        rollingStartIntervalNumber: Int32(today - 144),
                        rollingPeriod: 144,
                        transmissionRiskLevel: 2,
                        daysSinceOnsetOfSymptoms: 1,
                        reportType: "CONFIRMED_TEST"
                    )
                ]
            )
        ) { (_: UUID) async throws(SubmissionFailure) in }

        // A distribution run that publishes the current hour.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nhs-trl-\(UUID().uuidString)")
        try await withCleanup {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let signingKey = P256.Signing.PrivateKey()
            let keyFile = folder.appendingPathComponent("signing.pem")
            try signingKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            var values = database.processEnvironment
            values["SIGNING_KEY_FILES"] = keyFile.path
            values["CDN_DIRECTORY"] = folder.appendingPathComponent("cdn").path
            values["SHIFTING_POLICY_THRESHOLD"] = "1"
            values["INCLUDE_INCOMPLETE_HOURS"] = "true"
            let configuration = try DistributionConfiguration.load(from: SettingsReader(values: values))
            let store = DirectoryStore(root: folder.appendingPathComponent("cdn"))
            let report = try #require(
                try await DistributionRun(
                    configuration: configuration,
                    keys: keys,
                    store: store,
                    clock: WallClock { now },
                    metrics: DistributionMetrics(factory: TestMetrics()),
                    logger: database.logger
                ).run()
            )
            #expect(report.audit?.missingCount == 0)

            let hour = EpochIntervals.hour(now)
            for folderName in ["DE", "EUR"] {
                let archive = try #require(try await store.get(CDNPaths.hour(folderName, hour)))
                let entries = try ZipArchive.entries(of: archive)
                let bin = try #require(entries.first { $0.name == ExportFile.contentEntry }?.data)
                let export = try TemporaryExposureKeyExport(serializedBytes: Array(bin.dropFirst(16)))
                let published = Dictionary(
                    export.keys.map { (Array($0.keyData), $0.transmissionRiskLevel) },
                    uniquingKeysWith: { first, _ in first }
                )
                for entry in submitted {
                    #expect(published[entry.key] == Int32(entry.trl + 1), "\(folderName): NHS TRL \(entry.trl)")
                }
                #expect(published[lowCWAKey] == nil, "\(folderName): the CWA app's key below the minimum")
            }
        } cleanup: {
            try? FileManager.default.removeItem(at: folder)
        }
    }
}
