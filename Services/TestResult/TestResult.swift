// test-result-service: labs post PCR, rapid-antigen and PoC-NAT results; verification-service polls them. With
// `NHS_ENABLED`, also the NHS test path's lab uploads and token API.

import ENNHS
import ENPersistence
import ENServiceKit

/// The binary's entry point; `main()` and its commands come from `ServiceEntrypoint`.
@main
enum TestResult: ServiceEntrypoint {
    static let serviceName = "test-result-service"
    static let migrationGroups = [TestResultMigrations.group]
    static let defaultCommand: String? = "serve"
    static var commands: [ServiceCommand<TestResult>] {
        [.serve, NHSAPIKeyCommand.command(groups: migrationGroups), .tool(NHSTokenCommand.self)]
    }
}
