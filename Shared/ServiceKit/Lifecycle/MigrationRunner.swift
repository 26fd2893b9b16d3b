// Applying a service's migrations on a connection of their own (start-up and `--migrate-only`).

package import ENPersistence
package import Logging
package import PostgresNIO

/// Runs the migrations of some groups over one short-lived connection (no pool to start and stop).
package enum MigrationRunner {
    /// Applies pending migrations of every group in order; returns the names applied.
    package static func run(
        groups: [MigrationGroup],
        database: DatabaseConfiguration,
        logger: Logger
    ) async throws -> [String] {
        let connection = try await database.connect(logger: logger)
        do {
            var applied: [String] = []
            for group in groups {
                applied += try await DatabaseMigrator(group: group).migrate(connection: connection, logger: logger)
            }
            try await connection.close()
            return applied
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// For one-shot commands on a service's database: applies the pending migrations of `groups`, then runs `body`
    /// with a pool that lives as long as `body` does.
    package static func withMigratedClient<Result: Sendable>(
        groups: [MigrationGroup],
        database: DatabaseConfiguration,
        logger: Logger,
        _ body: (PostgresClient) async throws -> Result
    ) async throws -> Result {
        _ = try await self.run(groups: groups, database: database, logger: logger)
        let client = database.makeClient(logger: logger)
        return try await withRunningServices([client]) {
            try await body(client)
        }
    }
}
