// Cluster-wide mutual exclusion for periodic jobs, so replicas never run the same job at once.

package import Logging
package import PostgresNIO

/// A PostgreSQL advisory lock identified by a 64-bit key.
package struct AdvisoryLock: Sendable, Hashable {
    package let key: Int64

    package init(key: Int64) {
        self.key = key
    }

    /// A lock whose key is derived from a name (FNV-1a, stable across processes and builds).
    package init(name: String) {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        self.key = Int64(bitPattern: hash)
    }

    /// Runs `body` in a transaction holding the lock (`tryLock`), or returns `nil` at once when another session
    /// holds it. The lock is released with the transaction, also when `body` throws.
    package func withTryLock<Result: Sendable>(
        client: PostgresClient,
        logger: Logger,
        _ body: @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result? {
        try await client.withTransaction(logger: logger) { connection in
            guard try await self.tryLock(connection: connection, logger: logger) else { return nil }
            return try await body(connection)
        }
    }

    /// Set with the lock, in the same statement, for the holder's transaction: a holder that dies gives the lock
    /// back soon. Its server session checks every second, also while a statement runs, whether the connection is
    /// gone (`client_connection_check_interval`): a killed process's kernel closes it, and without the check the
    /// session would finish its statement first (for up to the statement timeout). And it probes the connection by
    /// TCP keepalive once it is quiet for 30 s, every 10 s, 3 times: a host that vanished closes nothing, and the
    /// kernel's own keepalive starts after two hours. Everyone else would find the lock held meanwhile.
    private static let holderSettings = """
        set_config('client_connection_check_interval', '1s', true), set_config('tcp_keepalives_idle', '30', true),
        set_config('tcp_keepalives_interval', '10', true), set_config('tcp_keepalives_count', '3', true)
        """

    /// Takes the lock for the rest of the caller's transaction when no other session holds it; `false` when one does.
    package func tryLock(connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT pg_try_advisory_xact_lock(\(self.key)), \(unescaped: Self.holderSettings)",
            logger: logger
        )
        var acquired = false
        for try await (locked, _, _, _, _) in rows.decode((Bool, String, String, String, String).self) {
            acquired = locked
        }
        return acquired
    }

    /// Takes the lock for the rest of the caller's transaction, waiting as long as the transaction's
    /// `lock_timeout` allows (55P03) and its `statement_timeout` (57014), whichever is shorter: a caller that may wait
    /// longer than the connection's statement timeout raises that too. The wait's timeout is thrown here.
    package func lock(connection: PostgresConnection, logger: Logger) async throws {
        try await connection.runToEnd(
            "SELECT pg_advisory_xact_lock(\(self.key)), \(unescaped: Self.holderSettings)",
            logger: logger
        )
    }
}

/// Runs `body`, a `withTransaction` call; when the transaction rolled back cleanly because its closure threw,
/// rethrows the closure's own error instead of PostgresNIO's wrapper, so callers can match on it.
package func rethrowingTransactionCause<Result>(_ body: () async throws -> Result) async throws -> Result {
    do {
        return try await body()
    } catch let error as PostgresTransactionError where error.rollbackError == nil && error.closureError != nil {
        throw error.closureError!
    }
}
