// verification-service: registration tokens, result polling, TANs, teleTANs and TAN verification.

import ENPersistence
import ENServiceKit

/// The binary's entry point; `main()` comes from `HTTPServiceEntrypoint`.
@main
enum Verification: HTTPServiceEntrypoint {
    static let serviceName = "verification-service"
    static let migrationGroups = [VerificationMigrations.group]
}
