// Where a service's database is and how to connect to it, parsed from `DATABASE_URL`.

import Foundation
package import Logging
import Metrics
import NIOSSL
package import PostgresNIO

/// Connection settings for one PostgreSQL database (one database per bounded context: Shared/README.md, "Databases").
package struct DatabaseConfiguration: Sendable, CustomStringConvertible {
    /// Transport security towards the database, spelled as libpq's `sslmode`.
    package enum TLSMode: String, Sendable, CaseIterable {
        case disable
        case prefer
        case require
        case verifyFull = "verify-full"
    }

    package var host: String
    package var port: Int
    package var username: String
    /// Secret: never printed; `description` redacts it.
    package var password: String?
    package var database: String
    package var tlsMode: TLSMode
    /// Upper bound of the connection pool.
    package var maxConnections: Int
    /// Apply pending migrations at start-up (dev and tests); deployments run `--migrate-only` instead.
    package var autoMigrate: Bool
    /// Longest a statement of a pooled connection may run (PostgreSQL's `statement_timeout`, sent when the
    /// connection starts, so it costs no round trip per transaction). Migrations, on their own connection, have none.
    package var statementTimeout: Duration = .seconds(30)
    /// Longest the opening of a connection may take.
    package var connectTimeout: Duration = .seconds(5)
    /// Longest a request waits for a free connection of the pool before it is refused (`DatabasePool`).
    package var leaseTimeout: Duration = DatabasePool.defaultLeaseTimeout

    package init(
        host: String,
        port: Int = 5432,
        username: String,
        password: String?,
        database: String,
        tlsMode: TLSMode = .disable,
        maxConnections: Int = 10,
        autoMigrate: Bool = true
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tlsMode = tlsMode
        self.maxConnections = maxConnections
        self.autoMigrate = autoMigrate
    }

    /// Parses `postgres://user:password@host:port/database?sslmode=…` (also `postgresql://`); user, password and
    /// database may be percent-encoded. Throws a message that never contains the password.
    package init(url: String, maxConnections: Int = 10, autoMigrate: Bool = true) throws(DatabaseURLError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            throw DatabaseURLError("is not a URL (expected postgres://user:password@host:port/database)")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw DatabaseURLError("must use the postgres:// scheme")
        }
        guard let host = components.host, !host.isEmpty else { throw DatabaseURLError("has no host") }
        guard let user = components.user, !user.isEmpty else { throw DatabaseURLError("has no user name") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else { throw DatabaseURLError("has no database name") }
        var tlsMode = TLSMode.prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value.flatMap(TLSMode.init(rawValue:)) else {
                    let allowed = TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw DatabaseURLError("has an unknown sslmode (allowed: \(allowed))")
                }
                tlsMode = mode
            default:
                throw DatabaseURLError("has an unsupported parameter '\(item.name)' (only sslmode is understood)")
            }
        }
        self.init(
            host: host,
            port: components.port ?? 5432,
            username: user.removingPercentEncoding ?? user,
            password: components.password.map { $0.removingPercentEncoding ?? $0 },
            database: database.removingPercentEncoding ?? database,
            tlsMode: tlsMode,
            maxConnections: maxConnections,
            autoMigrate: autoMigrate
        )
    }

    /// The URL with the password replaced by `***`, for logs and error messages.
    package var description: String {
        "postgres://\(self.username):***@\(self.host):\(self.port)/\(self.database)?sslmode=\(self.tlsMode.rawValue)"
    }

    /// A PostgresNIO client (a connection pool) of at most `maxConnections` (default: the configured pool size, which
    /// is then recorded as `en_db_pool_connections_max`). It must run as a `Service` (or in a task) before queries
    /// can complete.
    package func makeClient(logger: Logger, maxConnections: Int? = nil) -> PostgresClient {
        if maxConnections == nil {
            Gauge(label: DatabaseMetrics.max).record(self.maxConnections)
        }
        var configuration = PostgresClient.Configuration(
            host: self.host,
            port: self.port,
            username: self.username,
            password: self.password,
            database: self.database,
            tls: self.postgresTLS
        )
        configuration.options.maximumConnections = maxConnections ?? self.maxConnections
        configuration.options.connectTimeout = self.connectTimeout
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", "\(self.statementTimeout / .milliseconds(1))")
        ]
        return PostgresClient(configuration: configuration, backgroundLogger: logger.cappedForDatabase)
    }

    /// A client of one connection for `/health/ready` alone, so a saturated request pool neither delays the probe nor
    /// makes the service look down (which would move its load onto the other replicas). Run it as a service.
    package func makeReadinessClient(logger: Logger) -> PostgresClient {
        var single = self
        single.statementTimeout = min(self.statementTimeout, .seconds(5))
        return single.makeClient(logger: logger, maxConnections: 1)
    }

    /// Opens one connection outside any pool (for short jobs such as migrations); the caller closes it.
    package func connect(logger: Logger) async throws -> PostgresConnection {
        let tls: PostgresConnection.Configuration.TLS =
            switch self.tlsMode.mode {
            case .disable: .disable
            case .prefer(let configuration): .prefer(try NIOSSLContext(configuration: configuration))
            case .require(let configuration): .require(try NIOSSLContext(configuration: configuration))
            }
        var configuration = PostgresConnection.Configuration(
            host: self.host,
            port: self.port,
            username: self.username,
            password: self.password,
            database: self.database,
            tls: tls
        )
        configuration.options.connectTimeout = TimeAmount(self.connectTimeout)
        return try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
    }

    /// Settings for a single connection to another database of the same server (used by the test support).
    package func with(database: String) -> DatabaseConfiguration {
        var copy = self
        copy.database = database
        return copy
    }

    private var postgresTLS: PostgresClient.Configuration.TLS {
        switch self.tlsMode.mode {
        case .disable: .disable
        case .prefer(let tls): .prefer(tls)
        case .require(let tls): .require(tls)
        }
    }
}

extension DatabaseConfiguration.TLSMode {
    enum Mode {
        case disable
        case prefer(TLSConfiguration)
        case require(TLSConfiguration)
    }

    /// The NIOSSL settings of the mode. prefer/require encrypt without authenticating the server, as libpq does.
    /// Closing a connection waits at most 250 ms for the server's TLS close reply (NIOSSL's default is 5 s): a
    /// backend that hangs never sends it, and a request past its deadline answers only once its connection is
    /// closed (`DatabasePool.before`).
    var mode: Mode {
        var verified = TLSConfiguration.makeClientConfiguration()
        verified.shutdownTimeout = .milliseconds(250)
        var unverified = verified
        unverified.certificateVerification = .none
        switch self {
        case .disable: return .disable
        case .prefer: return .prefer(unverified)
        case .require: return .require(unverified)
        case .verifyFull: return .require(verified)
        }
    }

    /// How long closing a connection waits for the server's TLS close reply; nil without TLS.
    package var closeWait: Duration? {
        switch self.mode {
        case .disable: nil
        case .prefer(let tls), .require(let tls): .nanoseconds(tls.shutdownTimeout.nanoseconds)
        }
    }
}

/// Why a `DATABASE_URL` was refused. The message names the problem, never the password.
package struct DatabaseURLError: Error, Equatable, CustomStringConvertible {
    package let reason: String
    package init(_ reason: String) { self.reason = reason }
    package var description: String { self.reason }
}

extension Logger {
    /// This logger, at `info` or less verbose: PostgresNIO logs bind values and rows at `debug` and `trace`, and
    /// those are hashes of secrets. Stores and clients pass this to every query.
    package var cappedForDatabase: Logger {
        var logger = self
        if logger.logLevel < .info { logger.logLevel = .info }
        return logger
    }
}

/// The names of the connection pool's metrics.
package enum DatabaseMetrics {
    /// Connections `DatabasePool` has leased now, across the process's pools (a gauge).
    package static let inUse = "en_db_pool_connections_in_use"
    /// The pool's size, `maximumConnections` of the service's client (a gauge, set when the client is made).
    package static let max = "en_db_pool_connections_max"
    /// Requests refused with 503 because no pooled connection became free within the lease timeout (`DatabaseBusy`),
    /// counted by ServiceKit's error boundary.
    package static let leaseTimeouts = "en_db_pool_lease_timeouts_total"
}
