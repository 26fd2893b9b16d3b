// The schema of the `portal` database, in order.

import ENNHS
import ENPersistence
import ENServiceKit

/// The migrations of the `portal` database, in order.
enum PortalMigrations {
    static let group = MigrationGroup(
        name: "portal",
        migrations: [CreatePortal(), SealTOTPSecrets(), CreateNHSAPIKey(), StoreNHSAPIKeyDigests()]
    )
}
