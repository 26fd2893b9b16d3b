// A request waits a bounded time for a pooled connection; readiness has a connection of its own.

import ENPersistence
import ENTestSupport
import Foundation
import Logging
import MetricsTestKit
import PostgresNIO
import Testing

@Suite("Database pool leases (PostgreSQL)", .postgres())
struct DatabasePoolTests {
    @Test("with every connection taken a lease gives up with DatabaseBusy; once one is free it succeeds")
    func busyThenFree() async throws {
        let database = try PostgresTestDatabase.require()
        try await Self.withSingleConnection(database) { pool, holder in
            try await holder.hold {
                await #expect(throws: DatabaseBusy.self) {
                    try await pool.query("SELECT 1", logger: database.logger)
                }
            }
            let patient = DatabasePool(client: pool.client, leaseTimeout: .seconds(60))
            let rows = try await patient.query("SELECT 7", logger: database.logger)
            #expect(try rows.decode(Int.self) == [7])
        }
    }

    @Test("the pool counts the connections it has leased")
    func inUse() async throws {
        let database = try PostgresTestDatabase.require()
        let metrics = TestMetrics()
        let pool = DatabasePool(client: database.client, leaseTimeout: .seconds(60), metrics: metrics)
        let during = try await pool.withConnection { _ in
            try await pool.withConnection { _ in try metrics.expectMeter(DatabaseMetrics.inUse).lastValue }
        }
        #expect(during == 2)
        #expect(try metrics.expectMeter(DatabaseMetrics.inUse).lastValue == 0)
    }

    @Test("a transaction through the pool commits, and rolls back when its body throws")
    func transactions() async throws {
        let database = try PostgresTestDatabase.require()
        try await database.client.query("CREATE TABLE pool_probe (n integer)")
        let pool = DatabasePool(client: database.client)
        try await pool.withTransaction(logger: database.logger) { connection in
            _ = try await connection.query("INSERT INTO pool_probe VALUES (1)", logger: database.logger)
        }
        struct Abort: Error {}
        await #expect(throws: Abort.self) {
            try await rethrowingTransactionCause {
                try await pool.withTransaction(logger: database.logger) { connection in
                    _ = try await connection.query("INSERT INTO pool_probe VALUES (2)", logger: database.logger)
                    throw Abort()
                }
            }
        }
        #expect(try await database.count("pool_probe") == 1)
    }

    @Test("the readiness client answers while every connection of the request pool is taken")
    func readinessBesideSaturatedPool() async throws {
        let database = try PostgresTestDatabase.require()
        var configuration = database.configuration
        configuration.maxConnections = 1
        let readiness = configuration.makeReadinessClient(logger: database.logger)
        let task = Task { await readiness.run() }
        defer { task.cancel() }
        try await Self.withSingleConnection(database) { _, holder in
            try await holder.hold {
                let rows = try await readiness.query("SELECT 1", logger: database.logger)
                var answered = false
                for try await one in rows.decode(Int.self) { answered = one == 1 }
                #expect(answered)
            }
        }
    }

    @Test("a connection the server terminates under a statement is an outage; a broken statement is not")
    func unavailableClassification() async throws {
        let database = try PostgresTestDatabase.require()
        // A connection of its own, outside any pool: the server ends it (SQLSTATE 57P01, as when the server shuts down
        // or its postmaster dies under the request).
        let configuration = database.configuration
        let connection = try await PostgresConnection.connect(
            configuration: .init(
                host: configuration.host,
                port: configuration.port,
                username: configuration.username,
                password: configuration.password,
                database: configuration.database,
                tls: .disable
            ),
            id: 1,
            logger: database.logger
        )
        defer { Task { try? await connection.close() } }
        let terminated = await #expect(throws: (any Error).self) {
            _ = try await connection.query("SELECT pg_terminate_backend(pg_backend_pid())", logger: database.logger)
                .collect()
            _ = try await connection.query("SELECT 1", logger: database.logger).collect()
        }
        #expect(terminated.map(isDatabaseUnavailable) == true)
        let broken = await #expect(throws: (any Error).self) {
            try await database.client.query("SELECT * FROM no_such_table", logger: database.logger)
        }
        #expect(broken.map(isDatabaseUnavailable) == false)
        #expect(!isDatabaseUnavailable(DatabaseBusy(waited: .seconds(1))))
    }

    @Test("work that outlives the request's deadline ends with DatabaseDeadlineExceeded; the pool serves the next")
    func deadline() async throws {
        let database = try PostgresTestDatabase.require()
        try await Self.withSingleConnection(database) { quickPool, _ in
            // Leases that wait, so only the deadline can end the work on a loaded machine.
            let pool = DatabasePool(client: quickPool.client, leaseTimeout: .seconds(60))
            // A statement that would run for a minute, as a server that stops answering would keep it waiting.
            let passed = await #expect(throws: DatabaseDeadlineExceeded.self) {
                try await DatabasePool.$deadline.withValue(.now + .seconds(3)) {
                    try await pool.query("SELECT 1 FROM pg_sleep(60)", logger: database.logger)
                }
            }
            #expect(passed.map(isDatabaseUnavailable) == true)
            // Its connection was closed, so the pool's only connection slot is free again.
            let rows = try await DatabasePool.$deadline.withValue(.now + .seconds(50)) {
                try await pool.query("SELECT 8", logger: database.logger)
            }
            #expect(try rows.decode(Int.self) == [8])
            // Work that finishes in time returns its result; without a deadline there is none.
            let quick = try await DatabasePool.$deadline.withValue(.now + .seconds(50)) {
                try await pool.withConnection { connection in
                    try await connection.query("SELECT 9", logger: database.logger).collect().decode(Int.self)
                }
            }
            #expect(quick == [9])
            #expect(DatabasePool.deadline == nil)
        }
    }

    /// Runs `body` with a pool of one connection (lease timeout 100 ms) and a way to keep that connection taken.
    private static func withSingleConnection(
        _ database: PostgresTestDatabase,
        _ body: (DatabasePool, ConnectionHolder) async throws -> Void
    ) async throws {
        var configuration = database.configuration
        configuration.maxConnections = 1
        let client = configuration.makeClient(logger: database.logger)
        let task = Task { await client.run() }
        defer { task.cancel() }
        let pool = DatabasePool(client: client, leaseTimeout: .milliseconds(100))
        try await body(pool, ConnectionHolder(pool: pool))
    }
}

/// Keeps the pool's only connection leased while a body runs.
struct ConnectionHolder: Sendable {
    /// The pool whose connection is held; the holder waits as long as it takes to lease it.
    let pool: DatabasePool

    init(pool: DatabasePool) {
        self.pool = DatabasePool(client: pool.client, leaseTimeout: .seconds(60))
    }

    func hold(while body: () async throws -> Void) async throws {
        let (taken, tookIt) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseIt) = AsyncStream.makeStream(of: Void.self)
        let holding = Task {
            defer { tookIt.finish() }  // a failed lease ends the wait below instead of leaving it hanging
            try await self.pool.withConnection { _ in
                tookIt.yield()
                for await _ in release { break }
            }
        }
        var held = false
        for await _ in taken {
            held = true
            break
        }
        guard held else {
            try await holding.value
            Issue.record("the connection could not be leased")
            return
        }
        do {
            try await body()
        } catch {
            releaseIt.finish()
            _ = await holding.result
            throw error
        }
        releaseIt.finish()
        try await holding.value
    }
}
