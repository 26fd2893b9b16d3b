// efgs-gateway: a gateway of the EU Federation Gateway Service protocol (cwa-satellites §5), for local runs, tests
// and rehearsals of federation.

import ENPersistence
import ENServiceKit

/// `efgs-gateway serve` (the default) runs the API with its batching, retention and callback passes;
/// `efgs-gateway country …` registers and lists countries' certificates on the database.
@main
enum EFGSGateway: ServiceEntrypoint {
    static let serviceName = "efgs-gateway"
    static let migrationGroups: [MigrationGroup] = [GatewayMigrations.group]
    static let commands: [ServiceCommand<EFGSGateway>] = [
        .serve(summary: "the gateway API, forming download batches and calling back, until SIGTERM"),
        .tool(
            "country",
            summary: "add|list|revoke countries' certificates, straight on the database",
            CountryCommands.run
        ),
    ]
}
