// Migration 0002 of group `verification`: teleTAN hashes carry the id of the pepper key they were computed under.

import ENPersistence

/// `tele_tan.pepper_id` names the key of `TELETAN_PEPPER_FILE` whose HMAC-SHA-256 `tele_tan_hash` holds. Rows that
/// exist when this migration runs keep `pepper_id` NULL: their hash is the teleTAN's plain SHA-256, which
/// verification-service still accepts until the teleTAN expires (retention then deletes the row), so teleTANs issued
/// before an upgrade stay redeemable. Nothing writes a NULL `pepper_id`.
struct PepperTeleTANs: DatabaseMigration {
    let name = "0002_pepper_teletans"
    let statements = [
        "ALTER TABLE tele_tan ADD COLUMN pepper_id text CHECK (pepper_id ~ '^[A-Za-z0-9._-]{1,32}$')"
    ]
}
