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
            CreateNHSVirologyOrder(), NHSAPIKeysMigration(name: "0006_create_nhs_api_key"), CreateNHSIsolationPayment(),
            CreateNHSCircuitBreaker(), SeedNHSCircuitBreakerSwitches(), RecordRedemptions(),
        ]
    )
}
