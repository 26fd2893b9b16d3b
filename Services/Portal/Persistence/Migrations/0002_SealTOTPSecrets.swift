// Migration 0002 of group `portal`: TOTP secrets sealed with AES-GCM, under a key id, instead of in clear.

import ENPersistence

/// `totp_sealed` holds AES-GCM's combined form (12-byte nonce, the 20-byte secret encrypted, 16-byte tag) under the key
/// `totp_key_id` of `TOTP_KEY_FILE`; `totp_secret` (in clear) may now be NULL, and every row holds exactly one of the
/// two forms. SQL cannot seal (the key lives only in the service's file): portal-service seals every secret still in
/// clear before it serves (`PortalEngine.sealTOTPSecrets`), one conditional update per officer, so replicas starting
/// together seal each secret once and a row changed meanwhile is left to the next start.
struct SealTOTPSecrets: DatabaseMigration {
    let name = "0002_seal_totp_secrets"
    let statements = [
        "ALTER TABLE officer ADD COLUMN totp_key_id text CHECK (totp_key_id ~ '^[A-Za-z0-9._-]{1,32}$')",
        "ALTER TABLE officer ADD COLUMN totp_sealed bytea CHECK (octet_length(totp_sealed) = 48)",
        "ALTER TABLE officer ALTER COLUMN totp_secret DROP NOT NULL",
        """
        ALTER TABLE officer ADD CONSTRAINT officer_totp_one_form
            CHECK ((totp_secret IS NULL) <> (totp_sealed IS NULL) AND (totp_sealed IS NULL) = (totp_key_id IS NULL))
        """,
    ]
}
