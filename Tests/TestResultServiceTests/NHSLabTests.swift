// The NHS test path at test-result-service (nhs §3.2, §3.5, §3.6) on PostgreSQL: verification-service's orders,
// lab uploads by CTA token, the token API, and the internal result lookup.

import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PostgresNIO
import Testing

@testable import TestResultService

/// The lab router (API keys in memory) and the internal NHS routes (without service-token middleware).
private struct LabHarness {
    let lab: any ApplicationProtocol
    let internalApp: any ApplicationProtocol

    /// On the test's database, or on `dependencies` when given.
    init(_ overrides: [String: String] = [:], dependencies given: TestResultDependencies? = nil) throws {
        var dependencies =
            try given
            ?? {
                let database = try PostgresTestDatabase.require()
                return TestResultDependencies.postgres(client: database.client, logger: database.logger)
            }()
        dependencies.apiKeys = NHSAPIKeyVerifier(store: TestNHS.keyStore())
        let configuration = try TestResultFixture.configuration(TestNHS.settings(overrides))
        self.lab = try TestResultFixture.labApp(configuration: configuration, dependencies: dependencies)
        let router = Router(context: ServiceRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        try #require(
            TestResult.nhsLab(configuration: configuration, dependencies: dependencies, environment: .testing())
        ).addInternalRoutes(to: router.group("api/v1/nhs"))
        self.internalApp = Application(router: router)
    }

    static let labHeaders: HTTPFields = [.contentType: "application/json", .authorization: TestNHS.lab.authorization]

    /// An order as verification-service makes it: the pending result of a new CTA token.
    func order() async throws -> String {
        let cta = CTAToken.random().value
        let reply = try await self.internalApp.post(
            "/api/v1/nhs/order",
            headers: .json,
            body: ByteBuffer(string: #"{"ctaHashes":["\#(TestNHS.pepper.peppered(cta))"]}"#)
        )
        #expect(reply.status == .created)
        return cta
    }

    func upload(
        _ cta: String,
        result: String = "POSITIVE",
        kit: String = "LAB_RESULT",
        times: Int = 1
    )
        async throws -> [RouterReply]
    {
        try await self.lab.post(
            "/upload/virology-test/v2/npex-result",
            headers: Self.labHeaders,
            body: ByteBuffer(
                string:
                    #"{"ctaToken":"\#(cta)","testEndDate":"2026-11-20T00:00:00Z","testResult":"\#(result)","testKit":"\#(kit)"}"#
            ),
            times: times
        )
    }

    func result(_ cta: String) async throws -> RouterReply {
        try await self.internalApp.post(
            "/api/v1/nhs/result",
            headers: .json,
            body: ByteBuffer(string: #"{"ctaHashes":["\#(TestNHS.pepper.peppered(cta))"]}"#)
        )
    }
}

@Suite("NHS test path at test-result-service in memory")
struct NHSLabInMemoryTests {
    @Test("inMemory() mounts the lab and internal NHS routes: order, 20 parallel uploads store one, the token API")
    func wholePath() async throws {
        let harness = try LabHarness(dependencies: .inMemory())
        let cta = try await harness.order()
        #expect(try await harness.result(cta).string("status") == "pending")
        let replies = try await harness.upload(cta, times: 20)
        #expect(replies.filter { $0.status == .accepted }.count == 1)
        #expect(replies.filter { $0.status == .conflict }.count == 19)
        #expect(try await harness.result(cta).string("testResult") == "POSITIVE")
        let issued = try await harness.lab.post(
            "/upload/virology-test/v2/wls-result-tokengen",
            headers: LabHarness.labHeaders,
            body: ByteBuffer(
                string: #"{"testEndDate":"2026-11-21T00:00:00Z","testResult":"NEGATIVE","testKit":"LAB_RESULT"}"#
            )
        )
        let token = try #require(try issued.string("ctaToken"))
        #expect(try await harness.result(token).string("status") == "available")
        #expect(try await harness.upload(token)[0].status == .conflict)
    }
}

@Suite("NHS test path at test-result-service (PostgreSQL)", .postgres(TestResultMigrations.group))
struct NHSLabTests {
    @Test("an order is pending; the lab's upload makes it available; 20 parallel uploads to one order store one")
    func uploadByCTAToken() async throws {
        let harness = try LabHarness()
        let cta = try await harness.order()
        #expect(try await harness.result(cta).string("status") == "pending")
        let replies = try await harness.upload(cta, kit: "RAPID_RESULT", times: 20)
        #expect(replies.filter { $0.status == .accepted }.count == 1)
        #expect(replies.filter { $0.status == .conflict }.count == 19)
        #expect(replies.first { $0.status == .accepted }?.text == "successfully processed")
        let stored = try await harness.result(cta).json()
        #expect(stored["status"] as? String == "available")
        #expect(stored["testResult"] as? String == "POSITIVE")
        #expect(stored["testKit"] as? String == "RAPID_RESULT")
        #expect(stored["testEndDate"] as? String == "2026-11-20T00:00:00Z")
        #expect(stored["ctaHash"] as? String == TestNHS.pepper.peppered(cta))
    }

    @Test("no order 400, invalid 422 with the reason, no or a wrong API key 403; nothing half-stored")
    func refusals() async throws {
        let harness = try LabHarness()
        let database = try PostgresTestDatabase.require()
        #expect(try await harness.upload(CTAToken.random().value)[0].status == .badRequest)
        let cta = try await harness.order()
        let invalid = try await harness.upload(cta, result: "NEGATIVE", kit: "RAPID_RESULT")[0]
        #expect(invalid.status == .unprocessableContent)
        #expect(invalid.text == "validation error: RAPID_RESULT accepts only POSITIVE results")
        #expect(try await harness.upload("1234abcd")[0].status == .unprocessableContent)
        for authorization in [nil, TestNHS.mobile.authorization, "Bearer bGFiLXRlc3Q6d3Jvbmc="] {
            var headers: HTTPFields = [.contentType: "application/json"]
            headers[.authorization] = authorization
            let reply = try await harness.lab.post(
                "/upload/virology-test/v2/npex-result",
                headers: headers,
                body: ByteBuffer(string: "{}")
            )
            #expect(reply.status == .forbidden)
        }
        #expect(try await database.count("nhs_virology_result", where: "status = 'available'") == 0)
        #expect(try await harness.result(cta).string("status") == "pending")
    }

    @Test("the token API stores an available result under a new CTA token and answers it; V1 refuses a testKit")
    func tokenGen() async throws {
        let harness = try LabHarness()
        let reply = try await harness.lab.post(
            "/upload/virology-test/v2/eng-result-tokengen",
            headers: LabHarness.labHeaders,
            body: ByteBuffer(
                string: #"{"testEndDate":"2026-11-21T00:00:00Z","testResult":"INDETERMINATE","testKit":"LAB_RESULT"}"#
            )
        )
        #expect(reply.status == .ok)
        let cta = try #require(try reply.string("ctaToken"))
        #expect(CTAToken(cta) != nil)
        #expect(try await harness.result(cta).string("testResult") == "VOID")
        let v1 = try await harness.lab.post(
            "/upload/virology-test/wls-result-tokengen",
            headers: LabHarness.labHeaders,
            body: ByteBuffer(
                string: #"{"testEndDate":"2026-11-21T00:00:00Z","testResult":"POSITIVE","testKit":"LAB_RESULT"}"#
            )
        )
        #expect(v1.status == .unprocessableContent)
    }

    @Test("expired rows are unknown to every read and deleted by retention; an existing hash is a 409 collision")
    func expiry() async throws {
        let harness = try LabHarness()
        let database = try PostgresTestDatabase.require()
        let cta = try await harness.order()
        let again = try await harness.internalApp.post(
            "/api/v1/nhs/order",
            headers: .json,
            body: ByteBuffer(string: #"{"ctaHashes":["\#(TestNHS.pepper.peppered(cta))"]}"#)
        )
        #expect(again.status == .conflict)
        let other = CTAToken.random().value
        let underOldKey = try await harness.internalApp.post(
            "/api/v1/nhs/order",
            headers: .json,
            body: ByteBuffer(
                string: #"{"ctaHashes":["\#(TestNHS.pepper.peppered(other))","\#(TestNHS.pepper.peppered(cta))"]}"#
            )
        )
        #expect(underOldKey.status == .conflict, "a token whose hash under another pepper key exists collides")
        try await database.client.query("UPDATE nhs_virology_result SET expires_at = now() - interval '1 second'")
        #expect(try await harness.result(cta).status == .notFound)
        #expect(try await harness.upload(cta)[0].status == .badRequest)
        let store = PostgresNHSResultRepository(client: database.client, logger: database.logger)
        #expect(try await store.deleteExpired(now: Date()) == 1)
    }

    @Test("maintenance mode: 503 on the lab routes")
    func maintenance() async throws {
        let harness = try LabHarness(["NHS_MAINTENANCE_MODE": "true"])
        #expect(try await harness.upload(CTAToken.random().value)[0].status == .serviceUnavailable)
    }

    @Test("V1 and the fiorano path: a V1 upload is stored as LAB_RESULT")
    func v1Upload() async throws {
        let harness = try LabHarness()
        let cta = try await harness.order()
        let reply = try await harness.lab.post(
            "/upload/virology-test/fiorano-result",
            headers: LabHarness.labHeaders,
            body: ByteBuffer(
                string: #"{"ctaToken":"\#(cta)","testEndDate":"2026-11-20T00:00:00Z","testResult":"NEGATIVE"}"#
            )
        )
        #expect(reply.status == .accepted)
        #expect(try await harness.result(cta).string("testKit") == "LAB_RESULT")
        let v2 = try await harness.order()
        let fiorano = try await harness.lab.post(
            "/upload/virology-test/v2/fiorano-result",
            headers: LabHarness.labHeaders,
            body: ByteBuffer(
                string:
                    #"{"ctaToken":"\#(v2)","testEndDate":"2026-11-20T00:00:00Z","testResult":"POSITIVE","testKit":"RAPID_SELF_REPORTED"}"#
            )
        )
        #expect(fiorano.status == .accepted)
        #expect(try await harness.result(v2).string("testKit") == "RAPID_SELF_REPORTED")
    }

    @Test("the token API draws another token on a collision and fails (500) after three")
    func tokenCollisions() async throws {
        let database = try PostgresTestDatabase.require()
        let dependencies = TestResultDependencies.postgres(client: database.client, logger: database.logger)
        let configuration = try TestResultFixture.configuration(TestNHS.settings())
        var lab = try #require(
            TestResult.nhsLab(configuration: configuration, dependencies: dependencies, environment: .testing())
        )
        let taken = CTAToken.random()
        let fresh = CTAToken.random()
        let queue = Mutexed([taken, taken, fresh, taken, taken, taken])
        lab.engine.newCTAToken = { queue.withLock { $0.removeFirst() } }
        let router = Router(context: ServiceRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        lab.addLabRoutes(to: router.group("upload/virology-test"))
        let app = Application(router: router)
        let body = ByteBuffer(
            string: #"{"testEndDate":"2026-11-21T00:00:00Z","testResult":"POSITIVE","testKit":"LAB_RESULT"}"#
        )
        let path = "/upload/virology-test/v2/eng-result-tokengen"
        #expect(try await app.post(path, headers: .json, body: body).string("ctaToken") == taken.value)
        #expect(try await app.post(path, headers: .json, body: body).string("ctaToken") == fresh.value)
        #expect(try await app.post(path, headers: .json, body: body).status == .internalServerError)
        #expect(try await database.count("nhs_virology_result") == 2)
    }

    @Test("nhs-tokens stores N available results under new tokens; api-key adds, lists and revokes keys")
    func commands() async throws {
        let database = try PostgresTestDatabase.require()
        var environment = database.processEnvironment
        environment["NHS_CTA_PEPPER_FILE"] = TestKeyFiles.standard
        let tokens = await NHSTokenCommand.run(
            ["--count", "5", "--test-end-date", "2026-11-20", "--kit", "RAPID_RESULT"],
            environment: environment
        )
        #expect(tokens == 0)
        #expect(
            try await database.count(
                "nhs_virology_result",
                where: "source = 'tokengen' AND status = 'available' AND test_kit = 'RAPID_RESULT'"
            ) == 5
        )
        #expect(
            await NHSTokenCommand.run(["--count", "0", "--test-end-date", "2026-11-20"], environment: environment) == 2
        )
        #expect(
            await NHSTokenCommand.run(
                ["--count", "1", "--test-end-date", "2026-11-20", "--result", "NEGATIVE", "--kit", "RAPID_RESULT"],
                environment: environment
            ) == 2,
            "rapid kits take positive results only"
        )

        let groups = TestResult.migrationGroups
        let run = { (arguments: [String]) in
            await NHSAPIKeyCommand.run(
                arguments,
                environment: environment,
                groups: groups,
                service: "test-result-service"
            )
        }
        #expect(await run(["add", "testResultUpload", "lab-command"]) == 0)
        #expect(
            try await database.count(
                "nhs_api_key",
                where: "key_name = 'lab-command' AND secret_sha256 ~ '^[0-9a-f]{64}$' AND bcrypt_hash IS NULL"
            ) == 1
        )
        #expect(await run(["list"]) == 0)
        #expect(await run(["revoke", "testResultUpload", "lab-command"]) == 0)
        #expect(await run(["revoke", "testResultUpload", "lab-command"]) == 1, "revoked already")
        #expect(try await database.count("nhs_api_key", where: "revoked_at IS NOT NULL") == 1)
        #expect(await run(["add", "nosuchapi", "lab-command"]) == 2)
        #expect(await run(["add", "testResultUpload", "short"]) == 2, "names have 6 to 50 characters")
    }

    @Test("a key stored as bcrypt is accepted once through bcrypt and then kept as the SHA-256 of its secret")
    func bcryptKeyUpgraded() async throws {
        let database = try PostgresTestDatabase.require()
        let key = NHSAPIKeyCredential.generate(keyName: "lab-before")
        let memory = InMemoryNHSAPIKeyStore()
        memory.addBcrypt(key, api: .testResultUpload)
        guard case .bcrypt(let bcrypt) = try #require(memory.hash(api: .testResultUpload, keyName: key.keyName)) else {
            Issue.record("the in-memory store did not keep a bcrypt hash")
            return
        }
        try await database.client.query(
            """
            INSERT INTO nhs_api_key (api_name, key_name, bcrypt_hash, created_at)
            VALUES ('testResultUpload', \(key.keyName), \(bcrypt), now())
            """,
            logger: database.logger
        )
        let verifier = NHSAPIKeyVerifier(
            store: PostgresNHSAPIKeyStore(client: database.client, logger: database.logger)
        )
        let wrong = NHSAPIKeyCredential(keyName: key.keyName, secret: key.secret + "x")
        #expect(try await !verifier.verify(wrong.authorization, api: .testResultUpload))
        #expect(
            try await database.count("nhs_api_key", where: "bcrypt_hash IS NOT NULL") == 1,
            "a wrong secret upgrades nothing"
        )
        #expect(try await verifier.verify(key.authorization, api: .testResultUpload))
        let digest = SecretHash.sha256Hex(key.secret)
        #expect(
            try await database.count(
                "nhs_api_key",
                where: "key_name = 'lab-before' AND secret_sha256 = '\(digest)' AND bcrypt_hash IS NULL"
            ) == 1
        )
        // A second replica reads the upgraded row: the digest, no bcrypt and no check slot.
        let replica = NHSAPIKeyVerifier(
            store: PostgresNHSAPIKeyStore(client: database.client, logger: database.logger),
            maxRunning: 0
        )
        #expect(try await replica.verify(key.authorization, api: .testResultUpload))
        #expect(try await !replica.verify(wrong.authorization, api: .testResultUpload))
    }
}
