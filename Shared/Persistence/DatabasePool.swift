// The connection pool as request handlers use it: a connection is waited for at most `leaseTimeout`.

package import Logging
package import Metrics
package import PostgresNIO
import Synchronization

/// A `PostgresClient` whose leases give up after `leaseTimeout` with `DatabaseBusy`, so a request that finds every
/// connection taken answers 503 at once instead of queueing behind the others until the gateway gives up. The
/// timeout covers the wait for a connection only; the work done on it is bounded by `statement_timeout` and, for a
/// request, by the request's `deadline`.
package struct DatabasePool: Sendable {
    /// When database work of the current task must be over: ServiceKit sets it for every request, so a database
    /// that stops answering (a backend left behind by a crashed server, a connection whose peer vanished) costs the
    /// client a 503 before the gateway gives up, never a hung request. Past it, `withConnection` throws
    /// `DatabaseDeadlineExceeded` and closes the connection the work was using; nil (jobs, migrations): no deadline.
    /// ServiceKit's `UpstreamClient` keeps calls to peer services within it too.
    @TaskLocal package static var deadline: ContinuousClock.Instant?

    /// The pool, for what runs it (`run()` as a service) and for jobs that may wait (publication, retention).
    package let client: PostgresClient
    package let leaseTimeout: Duration

    /// The default of `DATABASE_LEASE_TIMEOUT`, for services answering requests.
    package static let defaultLeaseTimeout: Duration = .seconds(2)
    /// For pools whose callers should wait rather than be refused (tests on a loaded machine, one-off jobs); the
    /// services pass their configured timeout.
    package static let unhurriedLeaseTimeout: Duration = .seconds(60)

    /// Where `en_db_pool_connections_in_use` (connections leased now) goes: the process's metrics system unless a
    /// test gives its own. Every pool of a process leases from the same client, so the process-wide gauge is the
    /// client's.
    private let metrics: any MetricsFactory

    package init(
        client: PostgresClient,
        leaseTimeout: Duration = Self.defaultLeaseTimeout,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.client = client
        self.leaseTimeout = leaseTimeout
        self.metrics = metrics
    }

    /// Runs `body` on a leased connection, or throws `DatabaseBusy` when none is free within `leaseTimeout`, or
    /// `DatabaseDeadlineExceeded` when `deadline` passes first.
    package func withConnection<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        guard let deadline = Self.deadline else { return try await self.leased(body) }
        return try await Self.before(deadline) { race in
            try await self.leased { connection in
                // A lease that comes after the deadline (connecting took that long) must not start work nobody
                // waits for and nobody would stop: it holds the connection until the next caller's deadline.
                guard race.attach(connection) else { throw DatabaseDeadlineExceeded() }
                // Once the work is over the connection goes back to the pool, and may serve another request at
                // once: the deadline must not close it then.
                defer { race.detach() }
                return try await body(connection)
            }
        }
    }

    /// `work` in a task of its own, awaited until `deadline` at most. Its answer, or `DatabaseDeadlineExceeded` and
    /// the work cancelled, its connection closed: a query waiting on a dead server fails at once then, which hands
    /// the connection back to the pool (a structured wait would keep the request as long as the query hangs).
    ///
    /// The caller hears of the deadline only once the connection is closed. The pool creates a connection for a
    /// waiting lease when a lease is asked for, not when a leased connection closes: a next request asked for while
    /// the closing one still counted as leased would wait for a connection nobody makes.
    static func before<Result: Sendable>(
        _ deadline: ContinuousClock.Instant,
        _ work: @escaping @Sendable (DeadlineRace<Result>) async throws -> Result
    ) async throws -> Result {
        let race = DeadlineRace<Result>()
        let task = Task { try await work(race) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.waiting = continuation
                let timer = Task {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    guard !Task.isCancelled, let expiry = race.expire() else { return }
                    try? await expiry.connection?.close()
                    task.cancel()
                    expiry.caller.resume(throwing: DatabaseDeadlineExceeded())
                }
                Task {
                    let result = await task.result
                    timer.cancel()
                    race.finish(with: result)
                }
            }
        } onCancel: {
            task.cancel()
        }
    }

    private func leased<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let lease = LeaseRace()
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                try await self.client.withConnection { connection in
                    guard lease.start() else { throw DatabaseBusy(waited: self.leaseTimeout) }
                    let inUse = Meter(label: DatabaseMetrics.inUse, factory: self.metrics)
                    inUse.increment()
                    defer { inUse.decrement() }
                    return try await body(connection)
                }
            }
            group.addTask {
                try await Task.sleep(for: self.leaseTimeout)
                if lease.expire() { throw DatabaseBusy(waited: self.leaseTimeout) }
                return nil
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let result = next { return result }
            }
            throw CancellationError()
        }
    }

    /// `body` in a transaction (BEGIN … COMMIT, ROLLBACK when it throws) on a connection leased as `withConnection`.
    /// Errors come wrapped as PostgresNIO wraps them (`PostgresTransactionError`); `rethrowingTransactionCause` unwraps.
    package func withTransaction<Result: Sendable>(
        logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await self.withConnection { connection in
            try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
        }
    }

    /// Runs `query` on a leased connection and returns all its rows.
    @discardableResult
    package func query(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await self.withConnection { connection in
            try await connection.query(query, logger: logger).collect()
        }
    }
}

/// No connection of the pool became free in time. Nothing was sent to the database.
package struct DatabaseBusy: Error, CustomStringConvertible {
    package let waited: Duration
    package init(waited: Duration) { self.waited = waited }
    package var description: String { "no database connection could be leased within \(self.waited)" }
}

/// Database work of a request outlived the request's `DatabasePool.deadline`; its connection was closed. Whether a
/// write of the work was committed is unknown (as when a connection is lost).
package struct DatabaseDeadlineExceeded: Error, CustomStringConvertible {
    package init() {}
    package var description: String { "the database did not finish the request's work before its deadline" }
}

/// The meeting point of `DatabasePool.before`: the waiting caller, the connection its work uses, whether the
/// deadline passed, and who finished first (the work or the deadline).
final class DeadlineRace<Result: Sendable>: Sendable {
    private struct State {
        var waiting: CheckedContinuation<Result, any Error>?
        var connection: PostgresConnection?
        var expired = false
        var workDone = false
    }
    private let state = Mutex(State())

    var waiting: CheckedContinuation<Result, any Error>? {
        get { self.state.withLock { $0.waiting } }
        set { self.state.withLock { $0.waiting = newValue } }
    }

    /// Records the connection the work leased; false when the deadline has passed (the work must not use it).
    func attach(_ connection: PostgresConnection) -> Bool {
        self.state.withLock { state in
            guard !state.expired else { return false }
            state.connection = connection
            return true
        }
    }

    /// The work is over, its connection about to go back to the pool: its answer reaches the caller, not the
    /// deadline's.
    func detach() {
        self.state.withLock { state in
            state.connection = nil
            state.workDone = true
        }
    }

    /// At the deadline: unless the work is over, marks the deadline passed and takes the waiting caller (so a late
    /// answer of the work goes nowhere) and the connection the work holds, if it got one, to be closed.
    func expire() -> (caller: CheckedContinuation<Result, any Error>, connection: PostgresConnection?)? {
        self.state.withLock { state in
            guard !state.workDone, let caller = state.waiting else { return nil }
            state.waiting = nil
            state.expired = true
            return (caller, state.connection)
        }
    }

    /// Resumes the caller with `result` unless it was resumed already; whether this call did.
    @discardableResult
    func finish(with result: Swift.Result<Result, any Error>) -> Bool {
        let waiting = self.state.withLock { state in
            defer { state.waiting = nil }
            return state.waiting
        }
        guard let waiting else { return false }
        waiting.resume(with: result)
        return true
    }
}

/// Decides, once, whether a lease started in time or the wait expired.
private final class LeaseRace: Sendable {
    private enum State { case waiting, started, expired }
    private let state = Mutex(State.waiting)

    /// Whether the leased connection may be used (the wait has not expired).
    func start() -> Bool {
        self.state.withLock { state in
            guard state == .waiting else { return false }
            state = .started
            return true
        }
    }

    /// Whether the wait expired before a connection was leased.
    func expire() -> Bool {
        self.state.withLock { state in
            guard state == .waiting else { return false }
            state = .expired
            return true
        }
    }
}

extension Array where Element == PostgresRow {
    /// The rows' first column decoded as `type`.
    package func decode<Column: PostgresDecodable>(
        _ type: Column.Type,
        file: String = #fileID,
        line: Int = #line
    ) throws -> [Column] {
        try self.map { try $0.decode(Column.self, file: file, line: line) }
    }

    /// The rows decoded as `type`, as `PostgresRowSequence.decode` does for a stream.
    package func decode<each Column: PostgresDecodable>(
        _ type: (repeat each Column).Type,
        file: String = #fileID,
        line: Int = #line
    ) throws -> [(repeat each Column)] {
        try self.map { try $0.decode(type, file: file, line: line) }
    }
}
