// data-donation-service: attested analytics, survey, error-log and self-report OTPs (cwa-satellites §4).

import ENNHS
import ENPersistence
import ENServiceKit

/// The binary's entry point; `main()` and its commands come from `ServiceEntrypoint`.
@main
enum DataDonation: ServiceEntrypoint {
    static let serviceName = "data-donation-service"
    static let migrationGroups = [DataDonationMigrations.group]
    static let commands: [ServiceCommand<DataDonation>] = [
        .serve, NHSAPIKeyCommand.command(groups: migrationGroups),
        .job("retention", summary: "apply the retention rules once, then exit", failure: "Retention failed") {
            configuration,
            dependencies,
            environment in
            let runtime = DataDonationRuntime(
                configuration: configuration,
                dependencies: dependencies,
                environment: environment
            )
            try await DataDonation.retention(runtime).run()
        },
        .tool("export", summary: "stream the analytics of --since DATE as --format csv|json to stdout") {
            arguments,
            environment in
            await AnalyticsExport.main(arguments: arguments, environment: environment)
        },
    ]
}
