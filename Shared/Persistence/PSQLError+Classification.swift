// Names for the PostgreSQL error conditions the repositories react to.

package import PostgresNIO

extension PSQLError {

    /// The object is in use, e.g. a template database with open connections (SQLSTATE 55006).
    package var isObjectInUse: Bool { self.sqlState == PostgresError.Code.objectInUse.raw }

    /// The transaction lost a deadlock or a serialization conflict (40P01, 40001); retrying it may succeed.
    package var isTransactionConflict: Bool { self.sqlState == "40P01" || self.sqlState == "40001" }

    /// The SQLSTATE the server sent, if the error came from the server.
    package var sqlState: String? { self.serverInfo?[.sqlState] }
}

/// Whether `error` says the database could not be used at all, rather than that this request was wrong: a connection
/// refused, reset or closed under the request, the server shutting down or restarting (SQLSTATE class 08, 57P01–57P03),
/// or the pool giving up on opening connections, or a request's work outliving its deadline (`DatabasePool.deadline`).
/// An outage a client may retry, not a bug.
package func isDatabaseUnavailable(_ error: any Error) -> Bool {
    switch error {
    case let error as PSQLError:
        let lost: [PSQLError.Code] = [
            .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
        ]
        if lost.contains(error.code) { return true }
        guard let state = error.sqlState else { return false }
        return state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
    case let error as PostgresTransactionError:
        return [error.beginError, error.closureError, error.commitError].contains {
            $0.map(isDatabaseUnavailable) ?? false
        }
    case is DatabaseDeadlineExceeded:
        return true
    default:
        // The pool's own error type lives in a module PostgresNIO does not export: it failed to open connections, or
        // is shutting down.
        return String(describing: type(of: error)) == "ConnectionPoolError"
    }
}
