// The schema of the `verification` database, in order.

import ENNHS
import ENPersistence
import ENServiceKit

/// The migrations of the `verification` database, in order.
enum VerificationMigrations {
    static let group = MigrationGroup(
        name: "verification",
        migrations: [
            CreateVerification(), PepperTeleTANs(), CountRegistrationDays(), SpendBearerTokens(),
            CreateNHSVirologyOrder(), CreateNHSAPIKey(), CreateNHSIsolationPayment(),
            CreateNHSCircuitBreaker(), SeedNHSCircuitBreakerSwitches(), RecordRedemptions(),
            StoreNHSAPIKeyDigests(),
        ]
    )
}
