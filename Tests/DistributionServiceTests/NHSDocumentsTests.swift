// The NHS app's static documents (nhs §6, §9): checked at start-up naming the file and member, published signed
// by every run (`date:` and the bytes), kept in one file with their signature in the directory store, and
// republished alone by `publish availability`.

import Crypto
import ENCrypto
import ENKeyStore
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MetricsTestKit
import NIOCore
import Testing

@testable import DistributionService

struct NHSDocumentShapeTests {
    static var bundled: URL { NHSDocuments.bundledFolder! }

    /// The bundled documents copied to a folder of the test's, with `file` replaced by `edit` of its JSON.
    static func folder(editing file: String? = nil, _ edit: (inout [String: Any]) -> Void = { _ in }) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nhs-docs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in NHSDocuments.shapes.keys {
            let source = Self.bundled.appendingPathComponent("\(name).json")
            var data = try Data(contentsOf: source)
            if name == file {
                var object = try JSONSerialization.jsonObject(with: data) as! [String: Any]
                edit(&object)
                data = try JSONSerialization.data(withJSONObject: object)
            }
            try data.write(to: folder.appendingPathComponent("\(name).json"))
        }
        return folder
    }

    @Test("the bundled documents fit their shapes; the tier metadata has the 16 tiers of nhs §6")
    func bundledDocuments() throws {
        let (documents, problems) = NHSDocuments.load(from: Self.bundled)
        #expect(problems == [])
        #expect(documents.map(\.name) == NHSDocuments.shapes.keys.sorted())
        let metadata = try #require(documents.first { $0.name == "tier-metadata" })
        let tiers = try #require(try JSONSerialization.jsonObject(with: Data(metadata.bytes)) as? [String: Any]).keys
        #expect(tiers.count == 16)
        #expect(tiers.contains("EN.Tier3"))
    }

    @Test(
        "a bad document is named with its member",
        arguments: [
            ("exposure-configuration", "exposureNotification.attenuationLevelValues must have 8 elements, has 7"),
            ("availability-ios", "minimumOSVersion.value must be a version such as 13.5.0"),
            ("availability-android", "minimumAppVersion.value must be a whole number"),
            ("self-isolation", "durationDays.contactCase is missing"),
            ("risky-venue-configuration", "durationDaz is not a member of this document"),
            ("symptomatic-questionnaire", "symptoms[0].title must be a language map with an \"en\" text"),
            ("tier-metadata", "EN.Tier1.colorScheme must be one of green, yellow, red, amber, neutral"),
        ]
    )
    func badDocument(file: String, problem: String) throws {
        let folder = try Self.folder(editing: file) { object in
            switch file {
            case "exposure-configuration":
                var inner = object["exposureNotification"] as! [String: Any]
                inner["attenuationLevelValues"] = [1, 1, 1, 1, 1, 1, 1]
                object["exposureNotification"] = inner
            case "availability-ios":
                var inner = object["minimumOSVersion"] as! [String: Any]
                inner["value"] = "thirteen"
                object["minimumOSVersion"] = inner
            case "availability-android":
                var inner = object["minimumAppVersion"] as! [String: Any]
                inner["value"] = "68"
                object["minimumAppVersion"] = inner
            case "self-isolation":
                var inner = object["durationDays"] as! [String: Any]
                inner["contactCase"] = nil
                object["durationDays"] = inner
            case "risky-venue-configuration":
                object["durationDaz"] = object["durationDays"]
            case "symptomatic-questionnaire":
                var symptoms = object["symptoms"] as! [[String: Any]]
                symptoms[0]["title"] = ["cy": "Tymheredd uchel"]
                object["symptoms"] = symptoms
            default:
                var tier = object["EN.Tier1"] as! [String: Any]
                tier["colorScheme"] = "purple"
                object["EN.Tier1"] = tier
            }
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(NHSDocuments.load(from: folder).problems == ["\(file).json: \(problem)"])
        let settings = SettingsReader(
            values: [
                "DATABASE_URL": "postgres://u:p@127.0.0.1:1/keys",
                "SIGNING_KEY_FILES": try TestKeyFiles.write(
                    P256.Signing.PrivateKey().pemRepresentation,
                    suffix: ".pem"
                ),
                "NHS_DOCUMENTS_DIR": folder.path,
            ].merging(TestNHS.settings()) { old, _ in old }
        )
        _ = DistributionConfiguration(settings: settings)
        #expect(throws: ConfigurationError.self) { try settings.finish() }
        #expect(settings.problems.contains { $0.contains("\(file).json: \(problem)") })
    }
}

@Suite("NHS documents published by distribution (PostgreSQL)", .postgres(KeyStoreMigrations.group))
struct NHSDocumentsPublishingTests {
    @Test("every run publishes the documents signed; unchanged ones are not rewritten; the file holds its signature")
    func publishedSigned() async throws {
        try await DistributionFixture.with(settings: TestNHS.settings()) { fixture in
            let first = try await fixture.completedRun()
            #expect(first.publish.uploaded >= NHSDocuments.shapes.count)
            for name in NHSDocuments.shapes.keys {
                let file = try #require(fixture.bytes("distribution/\(name)"))
                let (signature, body) = try #require(DirectoryStore.signedFile(file), "\(name) is one signed file")
                #expect(
                    body
                        == [UInt8](
                            try Data(contentsOf: NHSDocumentShapeTests.bundled.appendingPathComponent("\(name).json"))
                        )
                )
                #expect(signature.date.hasSuffix(" UTC"))
                #expect(throws: Never.self) {
                    try TestNHS.verifier.verifyFile(signature: signature.value, date: signature.date, body: body)
                }
                #expect(throws: NHSVerifier.Failure.self) {
                    try TestNHS.verifier.verifyFile(
                        signature: signature.value,
                        date: signature.date,
                        body: body + [0x20]
                    )
                }
            }
            let before = try fixture.modificationDate("distribution/availability-ios")
            fixture.clock.advance(by: 3600)
            try await fixture.completedRun()
            #expect(try fixture.modificationDate("distribution/availability-ios") == before, "unchanged: not rewritten")
        }
    }

    @Test("without NHS_ENABLED nothing is published under distribution/")
    func offByDefault() async throws {
        try await DistributionFixture.with { fixture in
            try await fixture.completedRun()
            #expect(!fixture.exists("distribution/availability-ios"))
        }
    }
}

@Suite("NHS risky venues and post districts published by distribution (internal port)")
struct NHSListPublisherTests {
    static let metadata = #"{"EN.Tier1":{"colorScheme":"yellow"},"WA.Tier2":{"colorScheme":"amber"}}"#
    static let list =
        #"{"venues":[{"id":"CD2","riskyWindow":{"from":"2023-11-10T13:33:03Z","until":"2023-11-12T23:33:03Z"},"messageType":"M1"}]}"#

    /// The internal router publishing to `folder`, portal-service the only caller (its test key trusted).
    static func makeRouter(publishingTo folder: URL) throws -> Router<ServiceRequestContext> {
        let settings = SettingsReader(values: [
            "SERVICE_CALLER_KEYS": TestServiceKeys.callerKeys(["portal-service"])
        ])
        let callers = settings.serviceTokenVerifier(
            audience: "distribution-service",
            routes: NHSListPublisher.routes
        )
        try settings.finish()
        let signer = NHSSigner(keys: [NHSSigner.Key(id: "test-nhs", pem: TestNHS.signingKey.pemRepresentation)!])
        return try Distribution.buildInternalRouter(
            publisher: NHSListPublisher(
                store: DirectoryStore(root: folder),
                signer: signer,
                clock: .system,
                metrics: TestMetrics(),
                tierMetadata: Array(Self.metadata.utf8)
            ),
            callers: callers,
            checks: [],
            environment: .testing()
        )
    }

    /// The internal router over a directory store in a temporary folder.
    static func withRouter(
        _ body: (Application<RouterResponder<ServiceRequestContext>>, URL) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nhs-lists-\(UUID().uuidString)")
        try await withCleanup {
            let router = try Self.makeRouter(publishingTo: folder)
            try await body(Application(router: router), folder)
        } cleanup: {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    static func post(
        _ app: some ApplicationProtocol,
        _ json: String,
        to path: String = "/version/v1/nhs/risky-venues",
        caller: String? = "portal-service"
    ) async throws
        -> RouterReply
    {
        var headers: HTTPFields = caller.map { TestServiceKeys.header($0, for: "distribution-service") } ?? [:]
        headers[.contentType] = "application/json"
        return try await app.post(path, headers: headers, body: ByteBuffer(string: json))
    }

    /// The signed body of a published list; fails the test when the signature does not verify.
    static func published(_ folder: URL, _ key: String) throws -> String {
        let file = try [UInt8](Data(contentsOf: folder.appendingPathComponent(key)))
        let (signature, body) = try #require(DirectoryStore.signedFile(file))
        try TestNHS.verifier.verifyFile(signature: signature.value, date: signature.date, body: body)
        return String(decoding: body, as: UTF8.self)
    }

    @Test("post districts are published as v1 and v2 (with the whole metadata), signed; a bad upload changes nothing")
    func postDistricts() async throws {
        try await Self.withRouter {
            (app: Application<RouterResponder<ServiceRequestContext>>, folder: URL) async throws in
            let path = "/version/v1/nhs/risky-post-districts"
            let upload =
                #"{"postDistricts":{"M1":{"riskIndicator":"M","tierIndicator":"EN.Tier1"},"CF10":{"riskIndicator":"H","tierIndicator":"WA.Tier2"}},"localAuthorities":{"E07000240":{"tierIndicator":"EN.Tier1"}}}"#
            #expect(try await Self.post(app, upload, to: path).status == .noContent)
            #expect(
                try Self.published(folder, "distribution/risky-post-districts")
                    == #"{"postDistricts":{"CF10":"H","M1":"M"}}"#
            )
            let v2 = try Self.published(folder, "distribution/risky-post-districts-v2")
            #expect(
                v2
                    == #"{"postDistricts":{"CF10":"WA.Tier2","M1":"EN.Tier1"},"localAuthorities":{"E07000240":"EN.Tier1"},"riskLevels":"#
                    + Self.metadata + "}"
            )
            for bad in [
                "[]", upload.replacingOccurrences(of: "EN.Tier1", with: "EN.Tier9"),
                upload.replacingOccurrences(of: #""M""#, with: #""X""#), #"{"postDistricts":{}}"#,
            ] {
                let reply = try await Self.post(app, bad, to: path)
                #expect(reply.status == .unprocessableContent)
            }
            #expect(try Self.published(folder, "distribution/risky-post-districts-v2") == v2)
            let tiers = try await app.get(
                "/version/v1/nhs/tiers",
                headers: TestServiceKeys.header("portal-service", for: "distribution-service")
            )
            #expect(tiers.status == .ok)
            #expect(String(buffer: tiers.body) == #"{"tiers":["EN.Tier1","WA.Tier2"]}"#)
        }
    }

    @Test("portal-service's list is published at once, signed, as one file; a bad list is 422 and changes nothing")
    func publish() async throws {
        try await Self.withRouter {
            (app: Application<RouterResponder<ServiceRequestContext>>, folder: URL) async throws in
            #expect(try await Self.post(app, Self.list).status == .noContent)
            let file = try [UInt8](Data(contentsOf: folder.appendingPathComponent("distribution/risky-venues")))
            let (signature, body) = try #require(DirectoryStore.signedFile(file))
            #expect(String(decoding: body, as: UTF8.self) == Self.list)
            #expect(throws: Never.self) {
                try TestNHS.verifier.verifyFile(signature: signature.value, date: signature.date, body: body)
            }
            for bad in [
                "not json", Self.list.replacingOccurrences(of: "CD2", with: "AB1"),
                Self.list.replacingOccurrences(of: "M1", with: "M3"),
                #"{"venues":[{"id":"CD2","riskyWindow":{"from":"2023-11-10T13:33:03Z","until":"2023-11-10T13:33:03Z"},"messageType":"M1"}]}"#,
            ] {
                #expect(try await Self.post(app, bad).status == .unprocessableContent)
            }
            #expect(try [UInt8](Data(contentsOf: folder.appendingPathComponent("distribution/risky-venues"))) == file)
        }
    }

    @Test("20 uploads at once: the published v1 and v2 come from the same one")
    func postDistrictsRace() async throws {
        try await Self.withRouter {
            (app: Application<RouterResponder<ServiceRequestContext>>, folder: URL) async throws in
            var fields = TestServiceKeys.header("portal-service", for: "distribution-service")
            fields[.contentType] = "application/json"
            let headers = fields
            let statuses = try await app.test(.router) { client in
                try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for index in 0..<20 {
                        let upload =
                            #"{"postDistricts":{"D\#(index)":{"riskIndicator":"H","tierIndicator":"EN.Tier1"}},"localAuthorities":{}}"#
                        group.addTask {
                            try await client.execute(
                                uri: "/version/v1/nhs/risky-post-districts",
                                method: .post,
                                headers: headers,
                                body: ByteBuffer(string: upload)
                            ).status
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            #expect(statuses.allSatisfy { $0 == .noContent })
            let v1 = try Self.published(folder, "distribution/risky-post-districts")
            let v2 = try Self.published(folder, "distribution/risky-post-districts-v2")
            let code = try #require(v1.split(separator: "\"").dropFirst(3).first)
            #expect(
                v2.hasPrefix(#"{"postDistricts":{"\#(code)":"EN.Tier1"}"#),
                "v1 names \(code), v2 is \(v2.prefix(40))"
            )
        }
    }

    @Test("the internal port's OpenAPI document names exactly its routes and is served")
    func openAPI() async throws {
        let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Services/Distribution/openapi-internal.yaml")
        let operations = try OpenAPIDocument.operations(in: document).map { "\($0.method) \($0.path)" }
        #expect(
            Set(operations)
                == Set(NHSListPublisher.table.map(\.description)).union([
                    "GET /health/live", "GET /health/ready", "GET /metrics", "GET /openapi.yaml",
                ])
        )
        // Both directions: what the router mounts is what the document lists.
        let unused = FileManager.default.temporaryDirectory.appendingPathComponent("nhs-lists-\(UUID().uuidString)")
        try Self.makeRouter(publishingTo: unused).expectMounts(
            exactly: Set(operations),
            internalRoutes: NHSListPublisher.table
        )
        try await Self.withRouter { (app: Application<RouterResponder<ServiceRequestContext>>, _: URL) async throws in
            let served = try await app.get("/openapi.yaml")
            #expect(served.status == .ok)
            #expect(served.text == (try String(contentsOf: document, encoding: .utf8)))
        }
    }

    @Test("only portal-service, with a service token, may publish")
    func authentication() async throws {
        try await Self.withRouter {
            (app: Application<RouterResponder<ServiceRequestContext>>, folder: URL) async throws in
            #expect(try await Self.post(app, Self.list, caller: nil).status == .unauthorized)
            #expect(
                !FileManager.default.fileExists(atPath: folder.appendingPathComponent("distribution/risky-venues").path)
            )
        }
    }
}
