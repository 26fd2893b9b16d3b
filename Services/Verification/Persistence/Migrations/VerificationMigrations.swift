// The schema of the `verification` database, in order.

import ENPersistence

/// The migrations of the `verification` database, in order.
enum VerificationMigrations {
    static let group = MigrationGroup(
        name: "verification",
        migrations: [CreateVerification(), PepperTeleTANs(), CountRegistrationDays(), SpendBearerTokens()]
    )
}
