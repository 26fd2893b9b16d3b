// Migration 0004 of group `verification`: the bearer tokens that created a teleTAN, until they expire.

import ENPersistence

/// A teleTAN bearer token creates one teleTAN at most: its `jti` (hashed with its issuer) is stored in the teleTAN's
/// transaction, and a second creation with it finds the row and is refused. Retention deletes expired rows.
struct SpendBearerTokens: DatabaseMigration {
    let name = "0004_spend_bearer_tokens"
    let statements = [
        """
        CREATE TABLE spent_bearer_token (
            token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
            expires_at timestamptz NOT NULL
        )
        """
    ]
}
