// A statement run for its effect, with its rows read to the end.

package import Logging
package import PostgresNIO

extension PostgresConnection {
    /// Runs `query` and discards its rows. PostgresNIO hands back a statement's row sequence once the statement is
    /// described, before it ran; an error while it runs (a lock or statement timeout, a deadlock) waits in that
    /// sequence, and left unread it surfaces only as the next statement's "current transaction is aborted". Reading
    /// the rows to the end throws it here, where it happened.
    package func runToEnd(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}
