// One numbered schema change, compiled into the binary.

import ENCrypto

/// A schema change: a stable name and the SQL that applies it. Applied migrations are never edited;
/// the migrator records a checksum of the SQL and refuses to run when it changed.
package protocol DatabaseMigration: Sendable {
    /// Stable, ordered name such as `0001_create_test_result`.
    var name: String { get }
    /// The SQL statements, one per element, run in order in the migration transaction. (PostgreSQL's extended
    /// protocol, which PostgresNIO uses for every query, takes one statement per query.)
    var statements: [String] { get }
}

extension DatabaseMigration {
    /// Lowercase hex SHA-256 of the statements (each followed by a NUL byte, so splitting them differently changes it).
    package var checksum: String {
        SecretHash.sha256Hex(self.statements.map { $0 + "\u{0}" }.joined())
    }
}

/// The ordered migrations of one schema (`keys`, `testresult`, …); history is kept per group.
package struct MigrationGroup: Sendable {
    package let name: String
    package let migrations: [any DatabaseMigration]

    package init(name: String, migrations: [any DatabaseMigration]) {
        self.name = name
        self.migrations = migrations
    }
}
