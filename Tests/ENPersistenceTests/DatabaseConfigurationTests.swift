// Parsing DATABASE_URL.

import ENPersistence
import Testing

@Suite("DATABASE_URL parsing")
struct DatabaseConfigurationTests {
    @Test("a full URL: user, percent-encoded password, host, port, database, sslmode")
    func fullURL() throws {
        let configuration = try DatabaseConfiguration(
            url: "postgres://test%20user:p%40ss%3Aword@db.example:6543/test_result?sslmode=require"
        )

        #expect(configuration.username == "test user")
        #expect(configuration.password == "p@ss:word")
        #expect(configuration.host == "db.example")
        #expect(configuration.port == 6543)
        #expect(configuration.database == "test_result")
        #expect(configuration.tlsMode == .require)
    }

    @Test("defaults: port 5432, sslmode prefer, no password")
    func defaults() throws {
        let configuration = try DatabaseConfiguration(url: "postgresql://user@localhost/keys")

        #expect(configuration.port == 5432)
        #expect(configuration.tlsMode == .prefer)
        #expect(configuration.password == nil)
    }

    @Test(
        "malformed URLs are refused with a reason that never contains the password",
        arguments: [
            ("mysql://u:s3cret@h/db", "scheme"), ("postgres://u:s3cret@/db", "host"),
            ("postgres://:s3cret@h/db", "user"),
            ("postgres://u:s3cret@h", "database"), ("postgres://u:s3cret@h/db?sslmode=maybe", "sslmode"),
            ("postgres://u:s3cret@h/db?application_name=x", "unsupported parameter"), ("not a url", "URL"),
        ]
    )
    func malformed(_ url: String, _ reason: String) {
        #expect {
            try DatabaseConfiguration(url: url)
        } throws: { error in
            let message = (error as? DatabaseURLError)?.description ?? ""
            return message.contains(reason) && !message.contains("s3cret")
        }
    }

    @Test("over TLS, closing a connection waits at most 250 ms for the server's close reply")
    func closeWait() throws {
        for sslmode in ["prefer", "require", "verify-full"] {
            let configuration = try DatabaseConfiguration(url: "postgres://u@h/db?sslmode=\(sslmode)")
            #expect(configuration.tlsMode.closeWait == .milliseconds(250), "sslmode=\(sslmode)")
        }
        #expect(try DatabaseConfiguration(url: "postgres://u@h/db?sslmode=disable").tlsMode.closeWait == nil)
    }

    @Test("the description redacts the password")
    func redacted() throws {
        let configuration = try DatabaseConfiguration(url: "postgres://u:s3cret@h/db")

        #expect(configuration.description == "postgres://u:***@h:5432/db?sslmode=prefer")
    }
}
