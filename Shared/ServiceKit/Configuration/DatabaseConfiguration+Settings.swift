// Reading the database settings every service shares.

package import ENPersistence

extension DatabaseConfiguration {
    /// Reads `DATABASE_URL` (required, secret), `DATABASE_POOL_SIZE`, `DATABASE_AUTO_MIGRATE`,
    /// `DATABASE_STATEMENT_TIMEOUT` and `DATABASE_LEASE_TIMEOUT`.
    package init(settings: SettingsReader) {
        let url = settings.requiredString(
            "DATABASE_URL",
            secret: true,
            help: "postgres://user:password@host:port/database[?sslmode=disable|prefer|require|verify-full]"
        )
        let poolSize = settings.int(
            "DATABASE_POOL_SIZE",
            default: 10,
            range: 1...200,
            help: "Maximum open connections."
        )
        let autoMigrate = settings.bool(
            "DATABASE_AUTO_MIGRATE",
            default: true,
            help: "Apply pending migrations at start-up (deployments use --migrate-only instead)."
        )
        let statementTimeout = settings.duration(
            "DATABASE_STATEMENT_TIMEOUT",
            default: .seconds(30),
            minimum: .milliseconds(100),
            help: "Longest a statement of a pooled connection may run before PostgreSQL cancels it."
        )
        let leaseTimeout = settings.duration(
            "DATABASE_LEASE_TIMEOUT",
            default: DatabasePool.defaultLeaseTimeout,
            minimum: .milliseconds(10),
            help: "Longest a request waits for a free pooled connection before it is answered 503 with Retry-After."
        )
        do {
            try self.init(url: url, maxConnections: poolSize, autoMigrate: autoMigrate)
        } catch {
            if !url.isEmpty {
                settings.report("DATABASE_URL", error.reason)
            }
            self.init(
                host: "",
                username: "",
                password: nil,
                database: "",
                maxConnections: poolSize,
                autoMigrate: autoMigrate
            )
        }
        self.statementTimeout = statementTimeout
        self.leaseTimeout = leaseTimeout
    }
}
