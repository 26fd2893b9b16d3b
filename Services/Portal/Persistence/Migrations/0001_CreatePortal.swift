// Migration 0001 of group `portal`: officers, server-side sessions and the audit trail.

import ENPersistence

/// Officers are created by the CLI only. Sessions are rows so that several replicas share them; the cookie holds a
/// random token and the table only its SHA-256, like the CSRF token. The audit trail is append-only.
struct CreatePortal: DatabaseMigration {
    let name = "0001_create_portal"
    let statements = [
        """
        CREATE TABLE officer (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            username text NOT NULL UNIQUE CHECK (username ~ '^[a-z0-9][a-z0-9._-]{1,63}$'),
            password_hash text NOT NULL,
            roles text[] NOT NULL,
            totp_secret bytea NOT NULL CHECK (octet_length(totp_secret) = 20),
            totp_last_step bigint NOT NULL DEFAULT 0,
            failed_logins integer NOT NULL DEFAULT 0,
            locked_until timestamptz,
            disabled boolean NOT NULL DEFAULT false,
            last_teletan_at timestamptz,
            created_at timestamptz NOT NULL
        )
        """,
        """
        CREATE TABLE portal_session (
            token_hash text PRIMARY KEY,
            csrf_hash text NOT NULL,
            officer_id bigint REFERENCES officer (id) ON DELETE CASCADE,
            stage text NOT NULL CHECK (stage IN ('anonymous', 'password', 'authenticated')),
            created_at timestamptz NOT NULL,
            last_seen_at timestamptz NOT NULL
        )
        """,
        "CREATE INDEX portal_session_last_seen ON portal_session (last_seen_at)",
        """
        CREATE TABLE audit_event (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at timestamptz NOT NULL,
            username text NOT NULL,
            action text NOT NULL,
            details text NOT NULL DEFAULT ''
        )
        """,
        "CREATE INDEX audit_event_at ON audit_event (at)",
    ]
}
