// submission-service: diagnosis keys and check-ins from phones, submissions on behalf of event guests; with
// `NHS_ENABLED`, also the NHS key submission and its dummies.

import ENKeyStore
import ENNHS
import ENPersistence
import ENServiceKit

/// The binary's entry point; `main()` and its commands come from `ServiceEntrypoint`. The key store's schema is
/// applied here: submission is the first writer of the `keys` database.
@main
enum Submission: ServiceEntrypoint {
    static let serviceName = "submission-service"
    static let migrationGroups = [KeyStoreMigrations.group, SubmissionMigrations.group]
    static let defaultCommand: String? = "serve"
    static var commands: [ServiceCommand<Submission>] {
        [.serve, NHSAPIKeyCommand.command(groups: migrationGroups)]
    }
}
