// The schema submission-service adds to the `keys` database beside the key store's.

import ENPersistence
import ENServiceKit

/// Group `submission`: the NHS API keys of the key submission routes. The `keys` database's default privileges
/// would give distribution and federation access to every new table; this one is submission-service's alone.
enum SubmissionMigrations {
    static let group = MigrationGroup(
        name: "submission",
        migrations: [CreateNHSAPIKey(), RestrictNHSAPIKeys(), StoreNHSAPIKeyDigests()]
    )
}
