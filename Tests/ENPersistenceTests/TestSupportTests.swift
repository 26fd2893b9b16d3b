// The test support's own promises that other tests rely on.

import ENTestSupport
import PostgresNIO
import Testing

@Suite("Test support (PostgreSQL)", .postgres())
struct TestSupportTests {
    @Test("a PostgreSQL error in a test report carries the server's message, not the generic description")
    func errorReport() async throws {
        let database = try PostgresTestDatabase.require()

        let error = try #require(
            await #expect(throws: PSQLError.self) {
                try await database.client.query("SELECT * FROM no_such_table")
            }
        )

        #expect(error.description.contains("Generic description"))
        #expect(error.testDescription.contains(#"relation "no_such_table" does not exist"#))
    }
}
