// Migration 0001 of group `verification`: sessions, the keys they were registered with, TANs and teleTANs.

import ENPersistence

/// The schema of cwa-satellites §1.6, with two changes: GUID and DOB hashes are unique across both columns
/// through `registered_key` alone (the reference checks that in code, which races, plus a unique constraint per
/// column), and teleTANs live in a table of
/// their own rather than beside TANs. TANs carry no link to the session they came from. Hashes are `text` with
/// a pattern check, not `char(64)`: a `char` column compared with a `text` parameter cannot use its index.
struct CreateVerification: DatabaseMigration {
    let name = "0001_create_verification"
    let statements = [
        """
        CREATE TABLE app_session (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            registration_token_hash text NOT NULL CONSTRAINT app_session_token_unique UNIQUE CHECK (registration_token_hash ~ '^[0-9a-f]{64}$'),
            source text NOT NULL CHECK (source IN ('HASHED_GUID', 'TELETAN')),
            hashed_guid text CHECK (hashed_guid ~ '^[0-9a-f]{64}$'),
            hashed_guid_dob text CHECK (hashed_guid_dob ~ '^[x0-9a-f][0-9a-f]{63}$'),
            tele_tan_hash text CONSTRAINT app_session_teletan_unique UNIQUE CHECK (tele_tan_hash ~ '^[0-9a-f]{64}$'),
            teletan_type text CHECK (teletan_type IN ('TEST', 'EVENT')),
            tan_counter integer NOT NULL DEFAULT 0 CHECK (tan_counter >= 0),
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            CHECK ((source = 'HASHED_GUID') = (hashed_guid IS NOT NULL)),
            CHECK ((source = 'TELETAN') = (tele_tan_hash IS NOT NULL AND teletan_type IS NOT NULL)),
            CHECK (source = 'HASHED_GUID' OR hashed_guid_dob IS NULL)
        )
        """,
        "CREATE INDEX app_session_created_at ON app_session (created_at)",
        """
        CREATE TABLE registered_key (
            key_hash text PRIMARY KEY CHECK (key_hash ~ '^[x0-9a-f][0-9a-f]{63}$'),
            session_id bigint NOT NULL REFERENCES app_session (id) ON DELETE CASCADE
        )
        """,
        "CREATE INDEX registered_key_session ON registered_key (session_id)",
        """
        CREATE TABLE tan (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tan_hash text NOT NULL CONSTRAINT tan_hash_unique UNIQUE CHECK (tan_hash ~ '^[0-9a-f]{64}$'),
            source text NOT NULL CHECK (source IN ('CONNECTED_LAB', 'TELETAN')),
            teletan_type text CHECK (teletan_type IN ('TEST', 'EVENT')),
            created_at timestamptz NOT NULL,
            valid_from timestamptz NOT NULL,
            valid_until timestamptz NOT NULL,
            consumed_at timestamptz,
            CHECK ((source = 'TELETAN') = (teletan_type IS NOT NULL))
        )
        """,
        "CREATE INDEX tan_created_at ON tan (created_at)",
        """
        CREATE TABLE tele_tan (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tele_tan_hash text NOT NULL CONSTRAINT tele_tan_hash_unique UNIQUE CHECK (tele_tan_hash ~ '^[0-9a-f]{64}$'),
            type text NOT NULL CHECK (type IN ('TEST', 'EVENT')),
            created_at timestamptz NOT NULL,
            valid_until timestamptz NOT NULL,
            redeemed_at timestamptz
        )
        """,
        "CREATE INDEX tele_tan_created_at ON tele_tan (created_at)",
    ]
}
