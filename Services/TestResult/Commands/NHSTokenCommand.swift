// `test-result-service nhs-tokens`: CTA tokens with stored results in bulk (nhs §3.7), as CSV.

import ArgumentParser
import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation
import Logging

/// `nhs-tokens --count N --test-end-date yyyy-MM-dd [--result POSITIVE] [--kit LAB_RESULT]`: stores N available results
/// under new CTA tokens in one transaction and prints them as the reference's CSV (`cta token, test result, test end
/// date`), for a notification service to hand out. The reference's weekly schedule and encrypted ZIP are left to the
/// operator's scheduler and transport.
struct NHSTokenCommand: ServiceTool {
    static let configuration = CommandConfiguration(
        commandName: "nhs-tokens",
        abstract: "store results under new CTA tokens in bulk and print them as CSV",
        discussion: "Uses DATABASE_URL and NHS_CTA_PEPPER_FILE. Prints CSV on standard output."
    )

    @Option(help: "How many tokens: 1 to 10000.")
    var count: Int

    @Option(help: "The test's end day, yyyy-MM-dd.", transform: Self.day)
    var testEndDate: NHSTestEndDate

    @Option(help: "POSITIVE, NEGATIVE or VOID.", transform: Self.parse(NHSTestResult.init(rawValue:)))
    var result: NHSTestResult = .positive

    @Option(help: "LAB_RESULT, RAPID_RESULT or RAPID_SELF_REPORTED.", transform: Self.parse(NHSTestKit.init(rawValue:)))
    var kit: NHSTestKit = .labResult

    func validate() throws {
        guard (1...10_000).contains(self.count) else { throw ValidationError("--count takes 1 to 10000") }
        guard self.kit == .labResult || self.result == .positive else {
            throw ValidationError("\(self.kit.rawValue) takes POSITIVE results only")
        }
    }

    func run(environment: [String: String]) async -> Int32 {
        let settings = SettingsReader(arguments: ["test-result-service"], environment: environment)
        let database = DatabaseConfiguration(settings: settings)
        let pepper = settings.keyRing(
            "NHS_CTA_PEPPER_FILE",
            keyBytes: 32...128,
            help: "File of the keys CTA tokens are hashed under."
        )
        do {
            try settings.finish()
        } catch {
            Self.fail("\(error.description)")
            return 2
        }
        guard let pepper else { return 2 }
        let logger = Logger(label: "test-result-service", factory: { _ in SwiftLogNoOpLogHandler() })
        let result = NHSLabResult(testEndDate: self.testEndDate, testResult: self.result, testKit: self.kit)
        do {
            let tokens = try await MigrationRunner.withMigratedClient(
                groups: TestResult.migrationGroups,
                database: database,
                logger: logger
            ) { client in
                try await NHSLabEngine(
                    results: PostgresNHSResultRepository(client: client, logger: logger),
                    pepper: pepper,
                    clock: .system
                ).issueTokens(count: self.count, for: result)
            }
            var csv = "cta token, test result, test end date\n"
            for token in tokens { csv += "\(token.value), \(self.result.rawValue), \(self.testEndDate.wire)\n" }
            FileHandle.standardOutput.write(Data(csv.utf8))
            return 0
        } catch {
            Self.fail("failed: \(String(describing: type(of: error)))")
            return 1
        }
    }

    private static func day(_ text: String) throws -> NHSTestEndDate {
        guard let day = NHSTestEndDate(day: text) else { throw ValidationError("not a yyyy-MM-dd day: \(text)") }
        return day
    }

    private static func parse<Value>(
        _ make: @escaping @Sendable (String) -> Value?
    ) -> @Sendable (String) throws -> Value {
        { text in
            guard let value = make(text) else { throw ValidationError("not a known value: \(text)") }
            return value
        }
    }
}
