// A fresh PostgreSQL database per test, cloned from a migrated template, so database tests run in parallel.

import ENCrypto
package import ENPersistence
import ENServiceKit
import Foundation
package import Logging
package import PostgresNIO
package import Testing

/// The database of the running test, provided by the `.postgres(...)` trait.
package struct PostgresTestDatabase: Sendable {
    /// Settings pointing at this test's own database (user `POSTGRES_USER`).
    package let configuration: DatabaseConfiguration
    /// A running client for that database.
    package let client: PostgresClient
    package let logger: Logger

    @TaskLocal package static var current: PostgresTestDatabase?

    /// The current test's database; fails the test when it runs without the `.postgres` trait.
    package static func require(sourceLocation: SourceLocation = #_sourceLocation) throws -> PostgresTestDatabase {
        try #require(self.current, "this test needs the .postgres trait", sourceLocation: sourceLocation)
    }

    /// The environment of a service binary started by a test: this database, both ports chosen by the kernel.
    package var processEnvironment: [String: String] {
        let configuration = self.configuration
        return [
            "DATABASE_URL":
                "postgres://\(configuration.username):\(configuration.password ?? "")@\(configuration.host):\(configuration.port)/\(configuration.database)?sslmode=disable",
            "HTTP_PORT": "0",
            "INTERNAL_HTTP_PORT": "0",
            "METRICS_PORT": "0",
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
        ]
    }
}

extension PostgresTestDatabase {
    /// `SELECT count(*)` of `table` rows matching `condition` (SQL written by the test, never by a client).
    package func count(_ table: String, where condition: String = "true") async throws -> Int {
        let rows = try await self.client.query(
            PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table) WHERE \(condition)")
        )
        for try await value in rows.decode(Int.self) { return value }
        return 0
    }
}

extension Trait where Self == PostgresTrait {
    /// Gives every test (each case of a parameterised test) its own database, created from a template database
    /// on which `groups` were migrated once per process. Without `POSTGRES_HOST` the tests are skipped, or fail
    /// when `EN_REQUIRE_DB=1` (as `make test` and CI set it).
    package static func postgres(_ groups: MigrationGroup...) -> PostgresTrait {
        PostgresTrait(groups: groups)
    }
}

/// See `Trait.postgres(_:)`.
package struct PostgresTrait: TestTrait, SuiteTrait, TestScoping {
    let groups: [MigrationGroup]

    package var isRecursive: Bool { true }

    package func scopeProvider(for test: Test, testCase: Test.Case?) -> PostgresTrait? {
        // Scope each test case, not the suite: every case gets its own database.
        testCase == nil ? nil : self
    }

    package func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard let server = PostgresTestServer.fromEnvironment() else {
            if ProcessInfo.processInfo.environment["EN_REQUIRE_DB"] == "1" {
                Issue.record("EN_REQUIRE_DB=1 but POSTGRES_HOST is not set: start the database with `make db-start`")
                return
            }
            try Test.cancel("database test skipped: POSTGRES_HOST is not set (make test starts PostgreSQL)")
        }
        let database = try await server.createDatabase(migrating: self.groups)
        let client = database.configuration.makeClient(logger: database.logger)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                let scoped = PostgresTestDatabase(
                    configuration: database.configuration,
                    client: client,
                    logger: database.logger
                )
                try await PostgresTestDatabase.$current.withValue(scoped) {
                    try await function()
                }
            }
        } catch {
            try? await server.dropDatabase(database.configuration.database)
            throw error
        }
        try await server.dropDatabase(database.configuration.database)
    }
}

/// The server the tests use and the per-process template cache.
actor PostgresTestServer {
    private static let shared = Mutexed<PostgresTestServer?>(nil)

    let admin: DatabaseConfiguration
    let logger = Logger(label: "test.postgres")
    private var templates: [String: Task<String, any Error>] = [:]
    private let adminClient: PostgresClient

    private init(admin: DatabaseConfiguration) {
        self.admin = admin
        self.adminClient = admin.makeClient(logger: Logger(label: "test.postgres.admin"))
        let client = self.adminClient
        // Lives as long as the test process.
        Task.detached { await client.run() }
    }

    /// The server named by `POSTGRES_HOST`, `POSTGRES_PORT`, `POSTGRES_USER`, `POSTGRES_PASSWORD`,
    /// `POSTGRES_DATABASE` (the database used for administration, default `postgres`).
    static func fromEnvironment() -> PostgresTestServer? {
        let environment = ProcessInfo.processInfo.environment
        guard let host = environment["POSTGRES_HOST"], !host.isEmpty else { return nil }
        return self.shared.withLock { server in
            if let server { return server }
            var admin = DatabaseConfiguration(
                host: host,
                port: environment["POSTGRES_PORT"].flatMap(Int.init) ?? 5432,
                username: environment["POSTGRES_USER"] ?? "postgres",
                password: environment["POSTGRES_PASSWORD"],
                database: environment["POSTGRES_DATABASE"] ?? "postgres",
                tlsMode: .disable,
                maxConnections: 4,
                autoMigrate: false
            )
            // The whole suite opens hundreds of connections at once on two cores while CREATE DATABASE checkpoints:
            // 5 s, the services' bound, was seen to run out ("clientClosedConnection" at connection creation).
            admin.connectTimeout = .seconds(30)
            let created = PostgresTestServer(admin: admin)
            server = created
            return created
        }
    }

    /// A new database with the given migrations applied.
    func createDatabase(
        migrating groups: [MigrationGroup]
    ) async throws -> (configuration: DatabaseConfiguration, logger: Logger) {
        let template = try await self.template(for: groups)
        let name = "en_t_\(getpid())_" + Self.randomHex(6)
        try await self.retryingWhileInUse {
            try await self.adminClient.query(
                PostgresQuery(unsafeSQL: #"CREATE DATABASE "\#(name)" TEMPLATE "\#(template)""#),
                logger: self.logger
            )
        }
        var configuration = self.admin.with(database: name)
        configuration.maxConnections = 8
        return (configuration, self.logger)
    }

    func dropDatabase(_ name: String) async throws {
        try await self.adminClient.query(
            PostgresQuery(unsafeSQL: #"DROP DATABASE IF EXISTS "\#(name)" WITH (FORCE)"#),
            logger: self.logger
        )
    }

    /// The template for a set of migration groups, built at most once per process and, across processes,
    /// once per cluster (its name is a hash of the migrations, so a changed migration gets a new template).
    private func template(for groups: [MigrationGroup]) async throws -> String {
        let name = "en_tpl_" + Self.fingerprint(groups)
        if let task = self.templates[name] { return try await task.value }
        // Registered before any suspension, so concurrent first callers share one build.
        let isFirst = self.templates.isEmpty
        let task = Task {
            if isFirst { try await self.dropDatabasesOfDeadProcesses() }
            return try await self.buildTemplate(name: name, groups: groups)
        }
        self.templates[name] = task
        return try await task.value
    }

    private func buildTemplate(name: String, groups: [MigrationGroup]) async throws -> String {
        let lock = AdvisoryLock(name: "en-test-template")
        return try await self.adminClient.withConnection { connection in
            // Session lock: other test processes building the same template wait here.
            try await connection.query("SELECT pg_advisory_lock(\(lock.key))", logger: self.logger)
            do {
                let exists = try await self.databaseExists(name, connection: connection)
                if !exists {
                    let building = name + "_b"
                    try await connection.query(
                        PostgresQuery(unsafeSQL: #"DROP DATABASE IF EXISTS "\#(building)" WITH (FORCE)"#),
                        logger: self.logger
                    )
                    try await connection.query(
                        PostgresQuery(unsafeSQL: #"CREATE DATABASE "\#(building)""#),
                        logger: self.logger
                    )
                    _ = try await MigrationRunner.run(
                        groups: groups,
                        database: self.admin.with(database: building),
                        logger: self.logger
                    )
                    try await self.retryingWhileInUse {
                        try await connection.query(
                            PostgresQuery(unsafeSQL: #"ALTER DATABASE "\#(building)" RENAME TO "\#(name)""#),
                            logger: self.logger
                        )
                    }
                }
                try await connection.query("SELECT pg_advisory_unlock(\(lock.key))", logger: self.logger)
                return name
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(lock.key))", logger: self.logger)
                throw error
            }
        }
    }

    /// Test databases are named `en_t_<pid>_<random>`; those of test processes that no longer run (a crash, a
    /// killed run) are dropped, so the cluster does not fill up.
    private func dropDatabasesOfDeadProcesses() async throws {
        let rows = try await self.adminClient.query(
            "SELECT datname FROM pg_database WHERE datname LIKE 'en\\_t\\_%'",
            logger: self.logger
        )
        var stale: [String] = []
        for try await name in rows.decode(String.self) {
            let parts = name.split(separator: "_")
            guard parts.count == 4, let pid = Int32(parts[2]) else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { stale.append(name) }
        }
        for name in stale {
            try? await self.dropDatabase(name)
        }
    }

    private func databaseExists(_ name: String, connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)", logger: self.logger)
        for try await _ in rows { return true }
        return false
    }

    /// A database that was just disconnected can still count as "in use" for a moment (SQLSTATE 55006).
    private func retryingWhileInUse(_ operation: () async throws -> Void) async throws {
        var attempt = 0
        while true {
            do {
                return try await operation()
            } catch let error as PSQLError where error.isObjectInUse && attempt < 50 {
                attempt += 1
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    private static func fingerprint(_ groups: [MigrationGroup]) -> String {
        let text = groups.map { group in
            ([group.name] + group.migrations.map { "\($0.name):\($0.checksum)" }).joined(separator: "|")
        }
        .joined(separator: "/")
        return String(SecretHash.sha256Hex(text).prefix(16))
    }

    private static func randomHex(_ bytes: Int) -> String {
        Hex.encode((0..<bytes).map { _ in UInt8.random(in: 0...255) })
    }
}
