// The schema submission-service adds to the `keys` database beside the key store's.

import ENNHS
import ENPersistence
import ENServiceKit

/// Group `submission`: the NHS API keys of the key submission routes. The `keys` database's default privileges
/// would give distribution and federation access to every new table; this one is submission-service's alone.
enum SubmissionMigrations {
    static let group = MigrationGroup(
        name: "submission",
        migrations: [NHSAPIKeysMigration(name: "0001_create_nhs_api_key"), RestrictNHSAPIKeys()]
    )
}

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
