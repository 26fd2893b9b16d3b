// Migration 0003 of group `testresult`: results of the NHS test path, by CTA token (nhs §3.2).

import ENPersistence

/// One row per CTA token: `pending` from the app's order until a lab reports, `available` once it did (or at once for
/// the token API). The token is stored as its HMAC-SHA-256 under `NHS_CTA_PEPPER_FILE` (35 random bits: a plain hash
/// would be reversed by trying them all). Every read checks `expires_at`; retention deletes expired rows.
struct CreateNHSVirologyResult: DatabaseMigration {
    let name = "0003_create_nhs_virology_result"
    let statements = [
        """
        CREATE TABLE nhs_virology_result (
            cta_hash text PRIMARY KEY CHECK (cta_hash ~ '^[0-9a-f]{64}$'),
            status text NOT NULL CHECK (status IN ('pending', 'available')),
            test_end_date date,
            test_result text CHECK (test_result IN ('POSITIVE', 'NEGATIVE', 'VOID')),
            test_kit text CHECK (test_kit IN ('LAB_RESULT', 'RAPID_RESULT', 'RAPID_SELF_REPORTED')),
            source text NOT NULL CHECK (source IN ('order', 'tokengen')),
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            expires_at timestamptz NOT NULL,
            CHECK ((status = 'available') = (test_end_date IS NOT NULL AND test_result IS NOT NULL AND test_kit IS NOT NULL))
        )
        """,
        "CREATE INDEX nhs_virology_result_expires_at ON nhs_virology_result (expires_at)",
    ]
}
