// `test-result-service nhs-tokens`: CTA tokens with stored results in bulk (nhs §3.7), as CSV.

import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation
import Logging

/// `nhs-tokens --count N --test-end-date yyyy-MM-dd [--result POSITIVE] [--kit LAB_RESULT]`: stores N available results
/// under new CTA tokens in one transaction and prints them as the reference's CSV (`cta token, test result, test end
/// date`), for a notification service to hand out. Uses `DATABASE_URL` and `NHS_CTA_PEPPER_FILE`; the reference's
/// weekly schedule and encrypted ZIP are left to the operator's scheduler and transport.
enum NHSTokenCommand {
    static let usage = """
        usage: test-result-service nhs-tokens --count N --test-end-date yyyy-MM-dd [--result POSITIVE|NEGATIVE|VOID] [--kit LAB_RESULT|RAPID_RESULT|RAPID_SELF_REPORTED]
        N: 1 to 10000. Prints CSV on standard output.
        """

    static var command: ServiceCommand<TestResult> {
        .tool("nhs-tokens", summary: "store results under new CTA tokens in bulk and print them as CSV") {
            arguments,
            environment in
            await self.run(Array(arguments.dropFirst()), environment: environment)
        }
    }

    static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        var options: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count, arguments[index].hasPrefix("--") {
            options[String(arguments[index].dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        guard index == arguments.count,
            Set(options.keys).isSubset(of: ["count", "test-end-date", "result", "kit"]),
            let count = options["count"].flatMap(Int.init), (1...10_000).contains(count),
            let day = options["test-end-date"].flatMap(NHSTestEndDate.init(day:)),
            let result = NHSTestResult(rawValue: options["result"] ?? "POSITIVE"),
            let kit = NHSTestKit(rawValue: options["kit"] ?? "LAB_RESULT"),
            kit == .labResult || result == .positive
        else {
            self.fail(self.usage)
            return 2
        }
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
            self.fail("\(error.description)")
            return 2
        }
        guard let pepper else { return 2 }
        let logger = Logger(label: "test-result-service", factory: { _ in SwiftLogNoOpLogHandler() })
        let lab = NHSLabResult(testEndDate: day, testResult: result, testKit: kit)
        do {
            let tokens = try await MigrationRunner.withMigratedClient(
                groups: TestResult.migrationGroups,
                database: database,
                logger: logger
            ) { client in
                let store = NHSResultStore(client: client, logger: logger)
                for _ in 0..<3 {
                    let tokens = Array(Set((0..<count).map { _ in CTAToken.random() }))
                    guard tokens.count == count else { continue }
                    let now = Date()
                    do {
                        _ = try await store.createAvailable(
                            tokens.map { (pepper.peppered($0.value), lab) },
                            otherHashes: tokens.flatMap { pepper.pepperedCandidates($0.value).dropFirst() },
                            now: now,
                            expiresAt: now.addingTimeInterval(NHSLifetime.token)
                        )
                        return tokens
                    } catch is NHSCollision {
                        continue
                    }
                }
                throw NHSCollision()
            }
            var csv = "cta token, test result, test end date\n"
            for token in tokens { csv += "\(token.value), \(result.rawValue), \(day.wire)\n" }
            FileHandle.standardOutput.write(Data(csv.utf8))
            return 0
        } catch {
            self.fail("failed: \(String(describing: type(of: error)))")
            return 1
        }
    }

    private static func fail(_ message: String) {
        FileHandle.standardError.write(Data("\(message)\n".utf8))
    }
}
