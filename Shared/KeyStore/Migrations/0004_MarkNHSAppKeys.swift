// Migration 0004 of group `keys`: which keys the NHS app submitted (nhs §4).

import ENPersistence

/// `diagnosis_key.nhs_app`: the key came from the NHS app's submission. Its transmission risk is stored on the CWA
/// scale (the app's 0…7 plus one), and every valid one is published, whatever `MINIMUM_TRL_VALUE_ALLOWED` keeps of
/// the CWA app's keys: the NHS export carries every valid key. The column has a default, so the previous release keeps
/// writing while this one starts.
struct MarkNHSAppKeys: DatabaseMigration {
    let name = "0004_mark_nhs_app_keys"
    let statements = [
        "ALTER TABLE diagnosis_key ADD COLUMN nhs_app boolean NOT NULL DEFAULT false"
    ]
}
