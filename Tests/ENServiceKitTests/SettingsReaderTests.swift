// Reading configuration: types, ranges, flags, every problem at once, secrets kept out of messages.

import ENServiceKit
import Testing

@Suite("Settings reader")
struct SettingsReaderTests {
    @Test("typed values from the environment")
    func typedValues() throws {
        let settings = SettingsReader(values: [
            "PORT": "8080", "ENABLED": "yes", "WINDOW": "15m", "NAMES": "a, b,,c", "FORMAT": "JSON", "HOST": "example",
        ])

        #expect(settings.int("PORT", default: 1, range: 0...65535, help: "") == 8080)
        #expect(settings.bool("ENABLED", default: false, help: ""))
        #expect(settings.duration("WINDOW", default: .seconds(1), help: "") == .seconds(900))
        #expect(settings.list("NAMES", help: "") == ["a", "b", "c"])
        #expect(settings.choice("FORMAT", default: LoggingConfiguration.Format.text, help: "") == .json)
        #expect(settings.string("HOST", default: "x", help: "") == "example")
        #expect(settings.string("ABSENT", default: "fallback", help: "") == "fallback")
        try settings.finish()
    }

    @Test(
        "durations: units and plain seconds",
        arguments: [
            ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("2h", .seconds(7200)),
            ("21d", .seconds(21 * 86400)),
            ("90", .seconds(90)), ("1.5m", .seconds(90)),
        ]
    )
    func durations(_ text: String, _ expected: Duration) throws {
        let settings = SettingsReader(values: ["D": text])
        #expect(settings.duration("D", default: .seconds(1), help: "") == expected)
        try settings.finish()
    }

    @Test(
        "defaults print in the unit they read back in, sub-second ones in milliseconds",
        arguments: [
            (Duration.milliseconds(100), "100ms"), (.milliseconds(1500), "1500ms"), (.seconds(30), "30s"),
            (.seconds(900), "15m"),
            (.seconds(7200), "2h"), (.seconds(21 * 86400), "21d"),
        ]
    )
    func durationFormat(_ duration: Duration, _ text: String) throws {
        #expect(SettingsReader.format(duration) == text)
        let settings = SettingsReader(values: ["D": text])
        #expect(settings.duration("D", default: .seconds(1), help: "") == duration)
        #expect(SettingsReader.format(.zero) == "0s")
    }

    @Test("every malformed value and missing requirement is reported at once, by name and flag")
    func allProblems() {
        let settings = SettingsReader(values: [
            "PORT": "eighty", "COUNT": "500", "ENABLED": "perhaps", "WINDOW": "-1h", "FORMAT": "xml",
        ])

        _ = settings.int("PORT", default: 1, range: 0...65535, help: "")
        _ = settings.int("COUNT", default: 1, range: 1...100, help: "")
        _ = settings.bool("ENABLED", default: false, help: "")
        _ = settings.duration("WINDOW", default: .seconds(1), help: "")
        _ = settings.choice("FORMAT", default: LoggingConfiguration.Format.text, help: "")
        _ = settings.requiredString("TOKEN", secret: true, help: "")

        #expect(throws: ConfigurationError.self) { try settings.finish() }
        #expect(settings.problems.count == 6)
        #expect(settings.problems.contains { $0.hasPrefix("PORT (--port) must be an integer") })
        #expect(settings.problems.contains { $0.hasPrefix("COUNT (--count) must be between 1 and 100") })
        #expect(settings.problems.contains { $0.hasPrefix("TOKEN (--token) is required") })
    }

    @Test("a flag wins over the environment; a bare flag is true; comma values stay whole")
    func flags() throws {
        let settings = SettingsReader(
            arguments: ["service", "--http-port", "9000", "--migrate-only", "--database-url", "postgres://u:a,b@h/d"],
            environment: ["HTTP_PORT": "8000", "MIGRATE_ONLY": "false"]
        )

        #expect(settings.int("HTTP_PORT", default: 1, range: 0...65535, help: "") == 9000)
        #expect(settings.bool("MIGRATE_ONLY", default: false, help: ""))
        #expect(settings.requiredString("DATABASE_URL", secret: true, help: "") == "postgres://u:a,b@h/d")
        try settings.finish()
    }

    @Test("an unknown flag is a problem, so a typo cannot silently fall back to a default")
    func unknownFlag() {
        let settings = SettingsReader(arguments: ["service", "--http-prot", "9000", "--help"], environment: [:])
        _ = settings.int("HTTP_PORT", default: 8000, range: 0...65535, help: "")

        #expect(throws: ConfigurationError(problems: ["unknown option --http-prot"])) { try settings.finish() }
        #expect(settings.helpRequested)
    }

    @Test("secret values never appear in problems or help; help lists defaults")
    func secretsStayOut() {
        let settings = SettingsReader(values: ["DATABASE_URL": "postgres://u:hunter2@h/d"])
        _ = settings.requiredString("DATABASE_URL", secret: true, help: "where the database is")
        _ = settings.int("DATABASE_URL", default: 1, range: 0...1, help: "")
        _ = settings.int("HTTP_PORT", default: 8003, range: 0...65535, help: "port")

        #expect(settings.helpText.contains("--database-url, DATABASE_URL (secret)"))
        #expect(settings.helpText.contains("--http-port, HTTP_PORT [default: 8003]"))
        #expect(!settings.helpText.contains("hunter2"))
    }
}
