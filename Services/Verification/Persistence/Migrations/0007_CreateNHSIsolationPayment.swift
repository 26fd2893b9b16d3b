// Migration 0007 of group `verification`: isolation payment tokens (nhs §8).

import ENPersistence

/// A token is kept as its SHA-256. `created` tokens wait for the app's update until `expires_at` (two weeks by
/// default); `valid` ones carry the isolation's dates and live until the isolation ends; a consumed token is deleted.
/// Reads check `expires_at`; retention deletes the rows past it.
struct CreateNHSIsolationPayment: DatabaseMigration {
    let name = "0007_create_nhs_isolation_payment_token"
    let statements = [
        """
        CREATE TABLE nhs_isolation_payment_token (
            token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
            status text NOT NULL CHECK (status IN ('created', 'valid')),
            risky_encounter_date timestamptz,
            isolation_period_end_date timestamptz,
            created_at timestamptz NOT NULL,
            updated_at timestamptz,
            validated_at timestamptz,
            expires_at timestamptz NOT NULL,
            CHECK ((status = 'valid') = (risky_encounter_date IS NOT NULL AND isolation_period_end_date IS NOT NULL AND updated_at IS NOT NULL))
        )
        """,
        "CREATE INDEX nhs_isolation_payment_token_expiry ON nhs_isolation_payment_token (expires_at)",
    ]
}
