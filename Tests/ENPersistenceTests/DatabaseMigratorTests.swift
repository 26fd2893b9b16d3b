// The migration runner against a real PostgreSQL database.

import ENPersistence
import ENTestSupport
import Foundation
import Logging
import PostgresNIO
import Testing

@Suite("Database migrator (PostgreSQL)", .postgres())
struct DatabaseMigratorTests {
    struct Migration: DatabaseMigration {
        let name: String
        let statements: [String]
    }

    static let first = Migration(
        name: "0001_create_widget",
        statements: ["CREATE TABLE widget (id int PRIMARY KEY)", "CREATE INDEX widget_id ON widget (id)"]
    )
    static let second = Migration(name: "0002_add_colour", statements: ["ALTER TABLE widget ADD COLUMN colour text"])
    static let group = MigrationGroup(name: "widgets", migrations: [first, second])

    @Test("applies every migration once and records it; running again is a no-op")
    func appliesOnce() async throws {
        let database = try PostgresTestDatabase.require()
        let migrator = DatabaseMigrator(group: Self.group)

        let firstRun = try await migrator.migrate(client: database.client, logger: database.logger)
        let secondRun = try await migrator.migrate(client: database.client, logger: database.logger)

        #expect(firstRun == ["0001_create_widget", "0002_add_colour"])
        #expect(secondRun == [])
        #expect(try await self.history(database) == ["0001_create_widget", "0002_add_colour"])
        try await database.client.query("INSERT INTO widget (id, colour) VALUES (1, 'red')")
    }

    @Test("a new migration appended later is the only one applied")
    func appliesOnlyPending() async throws {
        let database = try PostgresTestDatabase.require()
        try await DatabaseMigrator(group: MigrationGroup(name: "widgets", migrations: [Self.first])).migrate(
            client: database.client,
            logger: database.logger
        )

        let applied = try await DatabaseMigrator(group: Self.group).migrate(
            client: database.client,
            logger: database.logger
        )

        #expect(applied == ["0002_add_colour"])
    }

    @Test("eight migrators started at once apply each migration exactly once")
    func concurrentStarters() async throws {
        let database = try PostgresTestDatabase.require()
        let migrator = DatabaseMigrator(group: Self.group)

        let applied = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask { try await migrator.migrate(client: database.client, logger: database.logger) }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }

        #expect(applied.sorted() == ["0001_create_widget", "0002_add_colour"])
        #expect(try await self.history(database).count == 2)
    }

    @Test("a migrator waits for another's lock longer than the connection's statement timeout")
    func waitsBeyondStatementTimeout() async throws {
        let database = try PostgresTestDatabase.require()
        var hurried = database.configuration
        hurried.statementTimeout = .milliseconds(200)
        let client = hurried.makeClient(logger: database.logger, maxConnections: 1)
        let holder = try await database.configuration.connect(logger: database.logger)
        let applied = try await withCleanup {
            try await withThrowingTaskGroup(of: [String]?.self) { group in
                group.addTask {
                    await client.run()
                    return nil
                }
                defer { group.cancelAll() }
                // Another migrator holds the lock while this one waits, for five times its statement timeout.
                try await holder.runToEnd("BEGIN", logger: database.logger)
                try await DatabaseMigrator.lock.lock(connection: holder, logger: database.logger)
                group.addTask {
                    try await DatabaseMigrator(group: Self.group).migrate(client: client, logger: database.logger)
                }
                try await Task.sleep(for: .seconds(1))
                try await holder.runToEnd("COMMIT", logger: database.logger)
                while let result = try await group.next() {
                    if let result { return result }
                }
                return []
            }
        } cleanup: {
            try await holder.close()
        }
        #expect(applied == ["0001_create_widget", "0002_add_colour"])
    }

    @Test("a migration edited after it was applied is refused")
    func editedMigration() async throws {
        let database = try PostgresTestDatabase.require()
        try await DatabaseMigrator(group: Self.group).migrate(client: database.client, logger: database.logger)
        let edited = Migration(name: "0001_create_widget", statements: ["CREATE TABLE widget (id bigint PRIMARY KEY)"])

        await #expect(throws: MigrationError.editedMigration(group: "widgets", name: "0001_create_widget")) {
            try await DatabaseMigrator(group: MigrationGroup(name: "widgets", migrations: [edited, Self.second]))
                .migrate(client: database.client, logger: database.logger)
        }
    }

    @Test("a history that differs from the code, or is ahead of it, is refused")
    func divergentHistory() async throws {
        let database = try PostgresTestDatabase.require()
        try await DatabaseMigrator(group: Self.group).migrate(client: database.client, logger: database.logger)
        let renamed = Migration(name: "0001_create_gadget", statements: Self.first.statements)

        await #expect(
            throws: MigrationError.divergentHistory(
                group: "widgets",
                recorded: "0001_create_widget",
                expected: "0001_create_gadget"
            )
        ) {
            try await DatabaseMigrator(group: MigrationGroup(name: "widgets", migrations: [renamed, Self.second]))
                .migrate(client: database.client, logger: database.logger)
        }
        await #expect(throws: MigrationError.unknownMigrations(group: "widgets", names: ["0002_add_colour"])) {
            try await DatabaseMigrator(group: MigrationGroup(name: "widgets", migrations: [Self.first]))
                .migrate(client: database.client, logger: database.logger)
        }
    }

    @Test("a failing migration leaves nothing behind: no table, no history row")
    func failureRollsBack() async throws {
        let database = try PostgresTestDatabase.require()
        let broken = Migration(
            name: "0002_broken",
            statements: ["CREATE TABLE gadget (id int)", "ALTER TABLE nowhere ADD COLUMN x int"]
        )
        let group = MigrationGroup(name: "widgets", migrations: [Self.first, broken])

        let error = await #expect(throws: PSQLError.self) {
            try await DatabaseMigrator(group: group).migrate(client: database.client, logger: database.logger)
        }
        #expect(error?.sqlState == "42P01")  // undefined_table: the broken statement, not a connection problem

        let tables = try await database.client.query(
            "SELECT count(*) FROM pg_tables WHERE tablename IN ('widget', 'gadget', 'schema_migrations')"
        )
        var count = -1
        for try await value in tables.decode(Int.self) { count = value }
        #expect(count == 0)
    }

    @Test("groups keep separate histories in one database")
    func separateGroups() async throws {
        let database = try PostgresTestDatabase.require()
        let other = MigrationGroup(
            name: "gadgets",
            migrations: [Migration(name: "0001_create_gadget", statements: ["CREATE TABLE gadget (id int)"])]
        )

        try await DatabaseMigrator(group: Self.group).migrate(client: database.client, logger: database.logger)
        let applied = try await DatabaseMigrator(group: other).migrate(client: database.client, logger: database.logger)

        #expect(applied == ["0001_create_gadget"])
        #expect(try await self.history(database) == ["0001_create_widget", "0002_add_colour"])
    }

    @Test("an advisory try-lock admits one holder at a time")
    func advisoryLock() async throws {
        let database = try PostgresTestDatabase.require()
        let lock = AdvisoryLock(name: "test.lock")
        let inside = OneShot<Void>()
        let release = OneShot<Void>()

        let first = Task {
            // Signal also when the first holder never gets inside, so the test fails instead of waiting forever.
            defer { inside.fulfil(()) }
            return try await lock.withTryLock(client: database.client, logger: database.logger) { _ in
                inside.fulfil(())
                await release.wait()
                return 1
            }
        }
        await inside.wait()
        let second = try await lock.withTryLock(client: database.client, logger: database.logger) { _ in 2 }
        release.fulfil(())
        let firstResult = try await first.value
        let third = try await lock.withTryLock(client: database.client, logger: database.logger) { _ in 3 }

        #expect(firstResult == 1)
        #expect(second == nil)
        #expect(third == 3)
        #expect(AdvisoryLock(name: "a").key == AdvisoryLock(name: "a").key)
        #expect(AdvisoryLock(name: "a").key != AdvisoryLock(name: "b").key)
    }

    @Test(
        "a lock is free again soon after its holder's connection is gone mid-statement",
        arguments: [false, true]
    )
    func vanishedHolder(waiting: Bool) async throws {
        let database = try PostgresTestDatabase.require()
        let lock = AdvisoryLock(name: "test.vanished")
        // The holder on a connection of its own, as a distribution run in another process; it takes the lock as
        // `tryLock` (the periodic jobs) or `lock` (the migrator, teleTAN issuance) does.
        let connection = try await database.configuration.connect(logger: database.logger)
        let statement: Task<Void, any Error>
        do {
            try await connection.query("BEGIN", logger: database.logger)
            if waiting {
                try await lock.lock(connection: connection, logger: database.logger)
            } else {
                #expect(try await lock.tryLock(connection: connection, logger: database.logger))
            }
            statement = Task {
                _ = try await connection.query("SELECT pg_sleep(600)", logger: database.logger)
            }
            // The holder's session is busy in its statement, as a killed run's session is while it reads the keys.
            let sleeping = try await Poll.until(every: .milliseconds(50), attempts: 200) {
                let rows = try await database.client.query(
                    """
                    SELECT count(*) FROM pg_stat_activity
                     WHERE datname = current_database() AND state = 'active' AND query = 'SELECT pg_sleep(600)'
                    """
                )
                for try await count in rows.decode(Int.self) { return count == 1 }
                return false
            }
            try #require(sleeping)
            #expect(try await lock.withTryLock(client: database.client, logger: database.logger) { _ in 1 } == nil)
        } catch {
            try? await connection.close()
            throw error
        }

        try await connection.close()
        let statementResult = await statement.result
        // The statement would hold the lock for ten minutes; the server notices the closed connection within a
        // second. Polling gives up after 10 s.
        let free = try await Poll.until(every: .milliseconds(100), attempts: 100) {
            try await lock.withTryLock(client: database.client, logger: database.logger) { _ in 2 } == 2
        }

        #expect(throws: (any Error).self) { try statementResult.get() }
        #expect(free)
    }

    private func history(_ database: PostgresTestDatabase) async throws -> [String] {
        let rows = try await database.client.query(
            "SELECT name FROM schema_migrations WHERE migration_group = 'widgets' ORDER BY position"
        )
        var names: [String] = []
        for try await name in rows.decode(String.self) { names.append(name) }
        return names
    }
}
