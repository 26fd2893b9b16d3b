// Pooled connections start with the configured statement timeout.

import ENPersistence
import ENTestSupport
import Foundation
import Logging
import PostgresNIO
import Testing

@Suite("Statement timeout (PostgreSQL)", .postgres())
struct StatementTimeoutTests {
    @Test("a pool's connections carry statement_timeout; a statement over it is cancelled")
    func statementTimeout() async throws {
        let database = try PostgresTestDatabase.require()
        #expect(try await Self.show(database.client) == "30s")

        var configuration = database.configuration
        configuration.statementTimeout = .milliseconds(200)
        let client = configuration.makeClient(logger: database.logger)
        let task = Task { await client.run() }
        defer { task.cancel() }
        #expect(try await Self.show(client) == "200ms")
        await #expect(throws: PSQLError.self) {
            for try await _ in try await client.query("SELECT pg_sleep(2)") {}
        }
    }

    private static func show(_ client: PostgresClient) async throws -> String? {
        for try await value in try await client.query("SHOW statement_timeout").decode(String.self) { return value }
        return nil
    }
}
