// Migration 0006 of group `verification`: the table of the service's NHS API keys, `nhs_api_key` (ENNHS's statement).

import ENNHS
import ENPersistence

/// `nhs_api_key`, which `NHSAPIKeyVerifier` reads and `verification-service api-key` writes.
struct CreateNHSAPIKey: DatabaseMigration {
    let name = "0006_create_nhs_api_key"
    let statements = NHSAPIKeyTable.statements
}
