// Migration 0002 of group `submission`: `nhs_api_key` is submission-service's alone.

import ENPersistence

/// Revokes what the default privileges of the `keys` database granted on `nhs_api_key` (the roles exist in the
/// deployed cluster, not necessarily in a test one).
struct RestrictNHSAPIKeys: DatabaseMigration {
    let name = "0002_restrict_nhs_api_key"
    let statements = [
        """
        DO $$
        DECLARE
            reader text;
        BEGIN
            FOREACH reader IN ARRAY ARRAY['distribution', 'federation'] LOOP
                IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = reader) THEN
                    EXECUTE format('REVOKE ALL ON nhs_api_key FROM %I', reader);
                END IF;
            END LOOP;
        END
        $$
        """
    ]
}
