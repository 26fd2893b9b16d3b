// test-result-service: labs post PCR, rapid-antigen and PoC-NAT results; verification-service polls them.

import ENPersistence
import ENServiceKit

/// The binary's entry point; `main()` and its commands come from `ServiceEntrypoint`.
@main
enum TestResult: ServiceEntrypoint {
    static let serviceName = "test-result-service"
    static let migrationGroups = [TestResultMigrations.group]
}
