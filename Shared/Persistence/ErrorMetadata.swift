// What may be logged about an unexpected error.

package import Logging
import PostgresNIO

/// Log metadata for an error that is not a client mistake: its type and, for PostgreSQL, the error code, SQLSTATE
/// and (except for data exceptions) the server message. Never `String(reflecting:)` of arbitrary errors:
/// PostgresNIO's includes the query's bind values, which may be hashes of secrets.
package enum ErrorMetadata {
    package static func of(_ error: any Error) -> Logger.Metadata {
        // A failed transaction wraps the error that broke it; report that one.
        if let error = error as? PostgresTransactionError,
            let cause = error.beginError ?? error.closureError ?? error.commitError
        {
            return self.of(cause).merging(["error.wrapper": "PostgresTransactionError"]) { a, _ in a }
        }
        var metadata: Logger.Metadata = ["error.type": "\(String(reflecting: type(of: error)))"]
        if let error = error as? PSQLError {
            metadata["error.code"] = "\(error.code)"
            Self.addServer(state: error.sqlState, message: error.serverInfo?[.message], to: &metadata)
        }
        // The simple-query protocol (migrations) reports server errors with the older error type.
        if case .server(let server) = error as? PostgresError {
            Self.addServer(state: server.fields[.sqlState], message: server.fields[.message], to: &metadata)
        }
        return metadata
    }

    private static func addServer(state: String?, message: String?, to metadata: inout Logger.Metadata) {
        if let state { metadata["db.sqlstate"] = "\(state)" }
        if let message, Self.messageIsSafe(sqlState: state) { metadata["db.message"] = "\(message)" }
    }

    /// Data exceptions (class 22) quote the offending value ("invalid input syntax for type …: \"…\""), which may be a
    /// hash of a secret; their message is left out.
    package static func messageIsSafe(sqlState: String?) -> Bool {
        !(sqlState ?? "22").hasPrefix("22")
    }
}
