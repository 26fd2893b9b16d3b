// Applies a group's pending migrations under an advisory lock and records them in `schema_migrations`.

package import Logging
package import PostgresNIO

/// Runs the migrations of one group against one database.
///
/// Everything happens in one transaction that first takes a transaction-scoped advisory lock, so concurrent
/// starters (replicas, a migration job) serialise: the second one waits, then finds nothing left to do.
/// The recorded history must be a prefix of the code's list, by name and checksum; anything else is refused.
package struct DatabaseMigrator: Sendable {
    /// Advisory lock shared by every migrator on a database: key ASCII "ENSCHEMA".
    package static let lock = AdvisoryLock(key: 0x454E_5343_4845_4D41)

    package let group: MigrationGroup

    package init(group: MigrationGroup) {
        self.group = group
    }

    /// Applies what is pending and returns the names applied now (empty when up to date).
    @discardableResult
    package func migrate(client: PostgresClient, logger: Logger) async throws -> [String] {
        try await client.withConnection { connection in
            try await self.migrate(connection: connection, logger: logger)
        }
    }

    /// The same, on a connection the caller manages (start-up migrations, test templates).
    @discardableResult
    package func migrate(connection: PostgresConnection, logger: Logger) async throws -> [String] {
        let group = self.group
        // A `MigrationError` names the problem; the transaction's wrapper would hide it.
        return try await rethrowingTransactionCause {
            try await connection.withTransaction(logger: logger) { connection in
                try await Self.migrate(group: group, connection: connection, logger: logger)
            }
        }
    }

    private static func migrate(
        group: MigrationGroup,
        connection: PostgresConnection,
        logger: Logger
    ) async throws -> [String] {
        // Waiting for another migrator is the point of the lock, but not forever: a stuck one fails this start
        // (the orchestrator retries) instead of hanging it. Applies to every lock the migration waits for. The
        // connection's statement timeout (`DATABASE_STATEMENT_TIMEOUT`, 30 s, meant for requests) is lifted for the
        // transaction: it would cut the lock wait short, and a migration's work on a large table takes what it takes.
        try await connection.runToEnd(
            "SELECT set_config('lock_timeout', '120s', true), set_config('statement_timeout', '0', true)",
            logger: logger
        )
        try await Self.lock.lock(connection: connection, logger: logger)
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                migration_group text NOT NULL,
                position integer NOT NULL,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (migration_group, position),
                UNIQUE (migration_group, name)
            )
            """,
            logger: logger
        )
        let applied = try await self.history(of: group.name, connection: connection, logger: logger)
        try self.checkHistory(applied, against: group)

        var appliedNow: [String] = []
        for (position, migration) in group.migrations.enumerated().dropFirst(applied.count) {
            logger.info(
                "Applying migration",
                metadata: ["migration.group": "\(group.name)", "migration.name": "\(migration.name)"]
            )
            for statement in migration.statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.query(
                """
                INSERT INTO schema_migrations (migration_group, position, name, checksum)
                VALUES (\(group.name), \(position + 1), \(migration.name), \(migration.checksum))
                """,
                logger: logger
            )
            appliedNow.append(migration.name)
        }
        return appliedNow
    }

    /// The applied migrations of a group in order.
    static func history(
        of group: String,
        connection: PostgresConnection,
        logger: Logger
    ) async throws -> [AppliedMigration] {
        let rows = try await connection.query(
            "SELECT name, checksum FROM schema_migrations WHERE migration_group = \(group) ORDER BY position",
            logger: logger
        )
        var applied: [AppliedMigration] = []
        for try await (name, checksum) in rows.decode((String, String).self) {
            applied.append(AppliedMigration(name: name, checksum: checksum))
        }
        return applied
    }

    /// Refuses a recorded history that is not a prefix of the code's migrations.
    static func checkHistory(_ applied: [AppliedMigration], against group: MigrationGroup) throws(MigrationError) {
        guard applied.count <= group.migrations.count else {
            throw .unknownMigrations(group: group.name, names: applied.dropFirst(group.migrations.count).map(\.name))
        }
        for (recorded, migration) in zip(applied, group.migrations) {
            guard recorded.name == migration.name else {
                throw .divergentHistory(group: group.name, recorded: recorded.name, expected: migration.name)
            }
            guard recorded.checksum == migration.checksum else {
                throw .editedMigration(group: group.name, name: migration.name)
            }
        }
    }
}

/// A row of `schema_migrations`.
struct AppliedMigration: Equatable, Sendable {
    let name: String
    let checksum: String
}

/// Why the recorded schema history and the code disagree; the service must not start on such a database.
package enum MigrationError: Error, Equatable, CustomStringConvertible {
    case unknownMigrations(group: String, names: [String])
    case divergentHistory(group: String, recorded: String, expected: String)
    case editedMigration(group: String, name: String)

    package var description: String {
        switch self {
        case .unknownMigrations(let group, let names):
            "database has \(group) migrations this binary does not know: \(names.joined(separator: ", ")) (older binary on a newer schema?)"
        case .divergentHistory(let group, let recorded, let expected):
            "\(group) migration history diverges: database has \(recorded) where the code has \(expected)"
        case .editedMigration(let group, let name):
            "\(group) migration \(name) was changed after it was applied (checksum differs)"
        }
    }
}
