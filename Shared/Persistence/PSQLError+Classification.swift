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
