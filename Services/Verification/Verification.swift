// verification-service: registration tokens, result polling, TANs, teleTANs and TAN verification; with
// `NHS_ENABLED`, also the NHS test path's orders, result polls and CTA exchanges.

import ENNHS
import ENPersistence
import ENServiceKit

/// The binary's entry point; `main()` and its commands come from `ServiceEntrypoint`.
@main
enum Verification: ServiceEntrypoint {
    static let serviceName = "verification-service"
    static let migrationGroups = [VerificationMigrations.group]
    static let defaultCommand: String? = "serve"
    static var commands: [ServiceCommand<Verification>] {
        [.serve, NHSAPIKeyCommand.command(groups: migrationGroups)]
    }
}
