// The schema of the `portal` database, in order.

import ENPersistence

/// The migrations of the `portal` database, in order.
enum PortalMigrations {
    static let group = MigrationGroup(name: "portal", migrations: [CreatePortal(), SealTOTPSecrets()])
}
