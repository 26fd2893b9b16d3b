// The schema federation-service adds to the `keys` database (cwa-server §5.4).

import ENPersistence

/// The `federation` group: the batches announced by the gateway and what became of them. The key tables it reads
/// and writes (`federation_upload_key`, `diagnosis_key`) belong to the `keys` group.
enum FederationMigrations {
    static let group = MigrationGroup(name: "federation", migrations: [CreateBatchInfo()])
}

/// The reference's `federation_batch_info` with checked values; one source system (`EFGS`) is used.
struct CreateBatchInfo: DatabaseMigration {
    let name = "0001_create_batch_info"
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
