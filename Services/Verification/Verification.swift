// verification-service: registration tokens, result polling, TANs, teleTANs and TAN verification.

import ENPersistence
import ENServiceKit

/// The binary's entry point; `main()` and its commands come from `ServiceEntrypoint`.
@main
enum Verification: ServiceEntrypoint {
    static let serviceName = "verification-service"
    static let migrationGroups = [VerificationMigrations.group]
}
