// Migration 0001 of group `testresult`: the results table.

import ENPersistence

/// `test_result` (cwa-satellites §2.4), keyed by the storage form of the test id.
struct CreateTestResult: DatabaseMigration {
    let name = "0001_create_test_result"
    let statements = [
        """
        CREATE TABLE test_result (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            result_id text NOT NULL UNIQUE CHECK (result_id ~ '^[x0-9a-f][0-9a-f]{63}$'),
            result smallint NOT NULL CHECK (result BETWEEN 0 AND 14),
            result_date timestamptz NOT NULL,
            lab_id varchar(64),
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL
        )
        """,
        "CREATE INDEX test_result_created_at ON test_result (created_at)",
    ]
}
