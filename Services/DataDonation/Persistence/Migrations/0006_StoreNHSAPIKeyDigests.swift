// Migration 0006 of group `datadonation`: the NHS API keys' secrets as SHA-256 digests (ENNHS's statement).

import ENNHS
import ENPersistence

/// `nhs_api_key.secret_sha256`, which `data-donation-service api-key add` writes; a key stored as bcrypt before gets its digest at its
/// first success.
struct StoreNHSAPIKeyDigests: DatabaseMigration {
    let name = "0006_store_nhs_api_key_digests"
    let statements = NHSAPIKeyTable.digestStatements
}
