// Migration 0002 of group `keys`: the batches the federation gateway announced (cwa-server §5.4).

import ENPersistence

/// The reference's `federation_batch_info` with checked values; federation-service writes it, one source system
/// (`EFGS`) is used.
struct CreateFederationBatchInfo: DatabaseMigration {
    let name = "0002_create_federation_batch_info"
    let statements = [
        """
        CREATE TABLE federation_batch_info (
            batch_tag text NOT NULL CHECK (length(batch_tag) BETWEEN 1 AND 64),
            date date NOT NULL,
            status text NOT NULL DEFAULT 'UNPROCESSED'
                CHECK (status IN ('UNPROCESSED', 'PROCESSED', 'PROCESSED_WITH_ERROR', 'ERROR', 'ERROR_WONT_RETRY')),
            source_system text NOT NULL DEFAULT 'EFGS',
            announced_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (batch_tag, source_system)
        )
        """,
        "CREATE INDEX federation_batch_info_status ON federation_batch_info (status, announced_at)",
    ]
}
