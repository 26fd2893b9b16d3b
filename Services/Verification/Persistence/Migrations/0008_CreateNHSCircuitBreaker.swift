// Migration 0008 of group `verification`: circuit-breaker approvals (nhs §7).

import ENPersistence

/// The officer's switch per kind (no row: `yes`) and how long a release quiets the spike rule; one row per approval
/// request (the token's SHA-256, the answer, whether the rule held it; nothing of the request itself); and requests
/// counted per minute for the rule (kept eight days).
struct CreateNHSCircuitBreaker: DatabaseMigration {
    let name = "0008_create_nhs_circuit_breaker"
    let statements = [
        """
        CREATE TABLE nhs_circuit_breaker_switch (
            kind text PRIMARY KEY CHECK (kind IN ('exposure-notification', 'venue')),
            mode text NOT NULL CHECK (mode IN ('yes', 'no', 'pending')),
            changed_at timestamptz NOT NULL,
            rule_quiet_until timestamptz
        )
        """,
        """
        CREATE TABLE nhs_circuit_breaker_request (
            token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
            kind text NOT NULL CHECK (kind IN ('exposure-notification', 'venue')),
            approval text NOT NULL CHECK (approval IN ('yes', 'no', 'pending')),
            held_by_rule boolean NOT NULL,
            created_at timestamptz NOT NULL,
            resolved_at timestamptz,
            expires_at timestamptz NOT NULL
        )
        """,
        "CREATE INDEX nhs_circuit_breaker_request_pending ON nhs_circuit_breaker_request (kind) WHERE approval = 'pending'",
        "CREATE INDEX nhs_circuit_breaker_request_expiry ON nhs_circuit_breaker_request (expires_at)",
        """
        CREATE TABLE nhs_circuit_breaker_count (
            kind text NOT NULL CHECK (kind IN ('exposure-notification', 'venue')),
            minute timestamptz NOT NULL,
            requests bigint NOT NULL CHECK (requests > 0),
            PRIMARY KEY (kind, minute)
        )
        """,
    ]
}
