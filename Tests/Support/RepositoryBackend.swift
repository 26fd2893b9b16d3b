// Which implementation of a repository a contract test case runs against: the same scenario over PostgreSQL and in
// memory, so that the in-memory stand-in keeps the rules of the real one.

package import ENPersistence
import Testing

/// The implementation a case of a contract test uses. The in-memory case needs no database; the PostgreSQL case
/// gets a database of its own, exactly as the `.postgres(groups…)` trait gives one to a whole test (skipped without
/// `POSTGRES_HOST`, failed with `EN_REQUIRE_DB=1`).
package enum RepositoryBackend: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case postgres
    case inMemory

    package var testDescription: String { self.rawValue }

    /// Runs `body` with this backend's repository: `inMemory()`, or `postgres(database)` on a fresh database with
    /// `groups` migrated, dropped afterwards.
    package func run<Repository: Sendable>(
        migrating groups: MigrationGroup...,
        inMemory: @Sendable () -> Repository,
        postgres: @Sendable (PostgresTestDatabase) -> Repository,
        _ body: @Sendable (Repository) async throws -> Void
    ) async throws {
        switch self {
        case .inMemory:
            try await body(inMemory())
        case .postgres:
            let test = try #require(Test.current, "a contract scenario runs inside a test")
            try await PostgresTrait(groups: groups).provideScope(for: test, testCase: Test.Case.current) {
                try await body(postgres(try PostgresTestDatabase.require()))
            }
        }
    }
}
