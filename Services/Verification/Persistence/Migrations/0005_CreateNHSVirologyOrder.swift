// Migration 0005 of group `verification`: the NHS test path's orders and diagnosis key submission tokens (nhs §3.2).

import ENPersistence

/// An order links a CTA token (its HMAC under `NHS_CTA_PEPPER_FILE`, shared with test-result-service, which holds
/// the result) to the app's polling token and to submission tokens (SHA-256: UUIDs have 122 random bits). A result
/// from the token API gets its order at its first CTA exchange, without a polling token. Every CTA exchange issues a
/// new submission token (only hashes are kept, so an earlier one cannot be shown again), and `submitted_at` makes
/// the order's keys submittable once, whichever of its tokens is used. Reads check `expires_at` (polls, exchanges)
/// and `submission_expires_at` (submissions); retention deletes rows past both.
struct CreateNHSVirologyOrder: DatabaseMigration {
    let name = "0005_create_nhs_virology_order"
    let statements = [
        """
        CREATE TABLE nhs_virology_order (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            cta_hash text NOT NULL CONSTRAINT nhs_virology_order_cta_unique UNIQUE CHECK (cta_hash ~ '^[0-9a-f]{64}$'),
            polling_token_hash text CONSTRAINT nhs_virology_order_polling_unique UNIQUE CHECK (polling_token_hash ~ '^[0-9a-f]{64}$'),
            download_count integer NOT NULL DEFAULT 0 CHECK (download_count BETWEEN 0 AND 2),
            created_at timestamptz NOT NULL,
            expires_at timestamptz NOT NULL,
            submission_expires_at timestamptz NOT NULL,
            submitted_at timestamptz
        )
        """,
        "CREATE INDEX nhs_virology_order_expiry ON nhs_virology_order (GREATEST(expires_at, submission_expires_at))",
        """
        CREATE TABLE nhs_submission_token (
            token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
            order_id bigint NOT NULL REFERENCES nhs_virology_order (id) ON DELETE CASCADE
        )
        """,
        "CREATE INDEX nhs_submission_token_order ON nhs_submission_token (order_id)",
    ]
}
