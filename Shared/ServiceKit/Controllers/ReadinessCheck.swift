// Something `/health/ready` asks before declaring the service ready.

package import Logging
package import PostgresNIO

/// A dependency the service cannot serve without.
package protocol ReadinessCheck: Sendable {
    /// Short name reported in the readiness body (`database`).
    var name: String { get }
    /// Throws when the dependency is not usable.
    func check(logger: Logger) async throws
}

/// Ready when the database answers `SELECT 1`.
package struct PostgresReadinessCheck: ReadinessCheck {
    package let name = "database"
    private let client: PostgresClient

    package init(client: PostgresClient) {
        self.client = client
    }

    package func check(logger: Logger) async throws {
        try await self.client.query("SELECT 1", logger: logger)
    }
}
