// The real binary: SIGTERM drains and exits 0, --migrate-only is idempotent, bad configuration lists every problem.

import AsyncHTTPClient
import ENPersistence
import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import PostgresNIO
import Testing

@testable import TestResultService

@Suite("test-result-service process", .postgres())
struct ProcessLifecycleTests {
    /// The test database's settings and the test key of the one caller of the internal API.
    private static func environment(_ database: PostgresTestDatabase) -> [String: String] {
        var environment = database.processEnvironment
        environment["SERVICE_CALLER_KEYS"] = TestServiceKeys.callerKeys(TestServiceKeys.testResultCallers)
        return environment
    }

    /// The built binary serving on the test's database, with its lab port once it listens; the caller kills it.
    private func startServing(_ database: PostgresTestDatabase) async throws -> (ServiceProcess, labPort: Int) {
        let service = try ServiceProcess.start(
            BuiltProduct.url("test-result-service"),
            environment: Self.environment(database)
        )
        do {
            return (service, try await service.waitForPort(listener: "lab"))
        } catch {
            service.kill()
            throw error
        }
    }

    @Test("SIGTERM while serving: exits 0 after draining")
    func sigtermExitsZero() async throws {
        let database = try PostgresTestDatabase.require()
        let (service, labPort) = try await self.startServing(database)
        defer { service.kill() }

        let internalPort = try await service.waitForPort(listener: "internal")
        let ready = try await HTTP.get("http://127.0.0.1:\(labPort)/health/ready")
        let lookup = try await HTTP.post(
            "http://127.0.0.1:\(internalPort)/api/v1/app/result",
            json: #"{"id":"\#(TestIDs.hashedGUID())"}"#,
            headers: [TestServiceKeys.pair("verification-service", for: "test-result-service")]
        )
        let anonymous = try await HTTP.post(
            "http://127.0.0.1:\(internalPort)/api/v1/app/result",
            json: #"{"id":"\#(TestIDs.hashedGUID())"}"#
        )
        service.signal(SIGTERM)
        let status = try await service.waitForExit()

        #expect(ready.status == 200)
        #expect(lookup.status == 200)
        #expect(anonymous.status == 401)
        #expect(status == 0)
        #expect(service.output.contains("Stopped"))
    }

    @Test("SIGTERM during an upload: the request in flight completes, then the process exits 0")
    func sigtermDrainsInFlightRequest() async throws {
        let database = try PostgresTestDatabase.require()
        let (service, labPort) = try await self.startServing(database)
        defer { service.kill() }
        let id = TestIDs.hashedGUID()
        let body = Array(TestResultFixture.batch([(id, 2, nil)]).readableBytesView)
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(labPort)/api/v1/lab/results")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .stream(stream, length: .unknown)

        async let reply = HTTPClient.shared.execute(request, timeout: .seconds(30))
        continuation.yield(ByteBuffer(bytes: body.prefix(20)))
        // The upload is in the handler (it counts as active), then the signal has closed the listener, and only
        // then does the rest of the body follow: states observed, not sleeps guessed (a fixed 300 ms was too short
        // once on a loaded machine). The listener is probed with a bare connect: AsyncHTTPClient retries refusals.
        try #require(
            await Poll.until {
                let scrape = try await HTTP.get("http://127.0.0.1:\(labPort)/metrics")
                return scrape.body.contains(#"http_server_active_requests{method="POST"} 1.0"#)
            },
            "the upload never showed as in progress"
        )
        service.signal(SIGTERM)
        try #require(await Poll.until { !TCP.accepts(port: labPort) }, "the lab listener did not close")
        continuation.yield(ByteBuffer(bytes: body.dropFirst(20)))
        continuation.finish()
        let status = try await reply.status
        let exit = try await service.waitForExit()
        let rows = try await database.client.query("SELECT count(*) FROM test_result WHERE result_id = \(id)")
        var stored = 0
        for try await count in rows.decode(Int.self) { stored = count }

        #expect(status == .noContent)
        #expect(exit == 0)
        #expect(stored == 1)
    }

    @Test("--migrate-only applies the migrations once; a second run applies none and changes nothing")
    func migrateOnlyTwice() async throws {
        let database = try PostgresTestDatabase.require()
        let binary = try BuiltProduct.url("test-result-service")

        let first = try ServiceProcess.start(
            binary,
            arguments: ["--migrate-only"],
            environment: Self.environment(database)
        )
        defer { first.kill() }
        let firstStatus = try await first.waitForExit()
        let historyAfterFirst = try await self.history(database)
        let second = try ServiceProcess.start(
            binary,
            arguments: ["--migrate-only"],
            environment: Self.environment(database)
        )
        defer { second.kill() }
        let secondStatus = try await second.waitForExit()
        let historyAfterSecond = try await self.history(database)

        #expect(firstStatus == 0)
        #expect(first.output.contains("migration.applied=5"))
        #expect(secondStatus == 0)
        #expect(second.output.contains("migration.applied=0"))
        #expect(
            historyAfterFirst == [
                "0001_create_test_result", "0002_add_result_protection", "0003_create_nhs_virology_result",
                "0004_create_nhs_api_key", "0005_store_nhs_api_key_digests",
            ]
        )
        #expect(historyAfterSecond == historyAfterFirst)
    }

    private func history(_ database: PostgresTestDatabase) async throws -> [String] {
        let rows = try await database.client.query(
            "SELECT name FROM schema_migrations WHERE migration_group = 'testresult' ORDER BY position"
        )
        var names: [String] = []
        for try await name in rows.decode(String.self) { names.append(name) }
        return names
    }
}

@Suite("test-result-service process without a database")
struct ProcessConfigurationTests {
    @Test("bad configuration: exit 2, every problem listed, the database password never printed")
    func badConfiguration() async throws {
        let environment = [
            "DATABASE_URL": "postgres://user:hunter2-secret@127.0.0.1:5432/db?sslmode=sometimes",
            "HTTP_PORT": "http",
            "LOG_LEVEL": "loud",
            "RESULT_DELETE_AFTER": "7d",
        ]

        let service = try ServiceProcess.start(
            BuiltProduct.url("test-result-service"),
            arguments: ["--http-prot", "1"],
            environment: environment
        )
        let status = try await service.waitForExit()

        #expect(status == 2)
        for expected in ["HTTP_PORT", "LOG_LEVEL", "sslmode", "RESULT_DELETE_AFTER", "unknown option --http-prot"] {
            #expect(service.output.contains(expected), "missing \(expected) in \(service.output)")
        }
        #expect(!service.output.contains("hunter2"))
    }

    @Test("--help lists every setting and exits 0")
    func help() async throws {
        let service = try ServiceProcess.start(
            BuiltProduct.url("test-result-service"),
            arguments: ["--help"],
            environment: [:]
        )
        let status = try await service.waitForExit()

        #expect(status == 0)
        for setting in [
            "DATABASE_URL", "--http-port", "LAB_CERT_SHA256_ALLOWLIST", "RESULT_MASK_AFTER", "MIGRATE_ONLY",
        ] {
            #expect(service.output.contains(setting))
        }
    }
}
