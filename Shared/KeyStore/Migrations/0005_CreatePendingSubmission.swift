// Migration 0005 of group `keys`: submissions held while their credential is spent.

import ENPersistence

/// `pending_submission`: a submission attempt's draft (the rows it will write), held under the SHA-256 of its
/// credential (a TAN, an NHS submission token, a self-report OTP) before the credential is spent, and removed when
/// the rows are written or the credential is refused. An attempt whose credential was spent but whose rows were not
/// written (its answer or its write was lost) is completed from here, by a retry or by submission-service's recovery
/// (Services/Submission/README.md, "Order of work"); `next_try` is when the recovery looks at it next, so one it cannot
/// resolve yet never keeps it from the others. Both times come from the holder's clock. The database's default privileges would let distribution and
/// federation read it; they are revoked, as for `nhs_api_key`.
struct CreatePendingSubmission: DatabaseMigration {
    let name = "0005_create_pending_submission"
    let statements = [
        """
        CREATE TABLE pending_submission (
            attempt uuid PRIMARY KEY,
            credential text NOT NULL CHECK (credential IN ('TAN', 'NHS_TOKEN', 'OTP')),
            credential_hash text NOT NULL CHECK (credential_hash ~ '^[0-9a-f]{64}$'),
            draft bytea NOT NULL,
            held_since timestamptz NOT NULL,
            next_try timestamptz NOT NULL
        )
        """,
        "CREATE INDEX pending_submission_credential ON pending_submission (credential_hash)",
        "CREATE INDEX pending_submission_next_try ON pending_submission (next_try)",
        """
        DO $$
        DECLARE
            reader text;
        BEGIN
            FOREACH reader IN ARRAY ARRAY['distribution', 'federation'] LOOP
                IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = reader) THEN
                    EXECUTE format('REVOKE ALL ON pending_submission FROM %I', reader);
                END IF;
            END LOOP;
        END
        $$
        """,
    ]
}
