// submission-service: diagnosis keys and check-ins from phones, submissions on behalf of event guests.

import ENPersistence
import ENServiceKit

/// The binary's entry point; `main()` comes from `HTTPServiceEntrypoint`.
@main
enum Submission: HTTPServiceEntrypoint {
    static let serviceName = "submission-service"
    static let migrationGroups = [SubmissionMigrations.group]
}
