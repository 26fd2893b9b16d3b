// portal-service: the officers' web portal that issues teleTANs, and the administrator's command line.

import ENNHS
import ENPersistence
import ENServiceKit

/// `portal-service` serves the portal; `portal-service user add|disable|reset-totp|list` and
/// `portal-service audit --since <ISO 8601 time>` administer it (there is no self-registration).
@main
enum Portal: ServiceEntrypoint {
    static let serviceName = "portal-service"
    static let migrationGroups = [PortalMigrations.group]
    static let commands: [ServiceCommand<Portal>] = [
        .serve(summary: "serve the officers' portal until SIGTERM"),
        .tool("user", summary: "add|disable|reset-totp|list officers, straight on the database", PortalCommands.run),
        .tool("audit", summary: "print the audit trail: audit --since 2026-11-22T00:00:00Z", PortalCommands.run),
        NHSAPIKeyCommand.command(groups: migrationGroups),
    ]
}
