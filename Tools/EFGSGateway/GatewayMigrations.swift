// The schema of the `efgs` database: countries' certificates, uploaded batches and keys, download batches,
// callbacks and their delivery tasks (cwa-satellites §5).

import ENPersistence

enum GatewayMigrations {
    static let group = MigrationGroup(name: "efgs", migrations: [CreateGateway(), AddCertificateSignature()])
}

/// The trust anchor's signature of each certificate row (cwa-satellites §5.1): Base64 of a detached CMS signature over
/// the certificate's DER. Rows without one fail the integrity check while a trust anchor is configured.
struct AddCertificateSignature: DatabaseMigration {
    let name = "0002_add_certificate_signature"
    let statements = [
        "ALTER TABLE certificate ADD COLUMN signature text CHECK (length(signature) BETWEEN 1 AND 16384)"
    ]
}

struct CreateGateway: DatabaseMigration {
    let name = "0001_create_gateway"
    let statements = [
        """
        CREATE TABLE certificate (
            thumbprint text NOT NULL CHECK (thumbprint ~ '^[0-9a-f]{64}$'),
            type text NOT NULL CHECK (type IN ('AUTHENTICATION', 'SIGNING', 'CALLBACK')),
            country text NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
            revoked boolean NOT NULL DEFAULT false,
            raw_pem text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (thumbprint, type)
        )
        """,
        """
        CREATE TABLE download_batch (
            batch_tag text PRIMARY KEY,
            day date NOT NULL,
            number integer NOT NULL,
            next_tag text,
            created_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (day, number)
        )
        """,
        """
        CREATE TABLE upload_batch (
            batch_tag text PRIMARY KEY CHECK (length(batch_tag) BETWEEN 1 AND 100),
            country text NOT NULL,
            uploader_thumbprint text NOT NULL,
            signing_thumbprint text NOT NULL,
            batch_signature text NOT NULL,
            amount integer NOT NULL CHECK (amount > 0),
            uploaded_at timestamptz NOT NULL DEFAULT now(),
            download_batch_tag text REFERENCES download_batch (batch_tag) ON DELETE SET NULL,
            position bigint GENERATED ALWAYS AS IDENTITY
        )
        """,
        "CREATE INDEX upload_batch_unbatched ON upload_batch (position) WHERE download_batch_tag IS NULL",
        "CREATE INDEX upload_batch_download ON upload_batch (download_batch_tag, position)",
        """
        CREATE TABLE diagnosis_key (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            upload_batch_tag text NOT NULL REFERENCES upload_batch (batch_tag) ON DELETE CASCADE,
            payload_hash text NOT NULL UNIQUE,
            key_data bytea NOT NULL,
            rolling_start_interval_number bigint NOT NULL,
            rolling_period bigint NOT NULL,
            transmission_risk_level integer NOT NULL,
            visited_countries text[] NOT NULL,
            origin text NOT NULL,
            report_type integer NOT NULL,
            days_since_onset_of_symptoms integer NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        "CREATE INDEX diagnosis_key_batch ON diagnosis_key (upload_batch_tag, id)",
        "CREATE INDEX diagnosis_key_created ON diagnosis_key (created_at)",
        """
        CREATE TABLE callback (
            country text NOT NULL,
            callback_id text NOT NULL CHECK (length(callback_id) BETWEEN 1 AND 64),
            url text NOT NULL,
            PRIMARY KEY (country, callback_id)
        )
        """,
        """
        CREATE TABLE callback_task (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            country text NOT NULL,
            callback_id text NOT NULL,
            batch_tag text NOT NULL,
            day date NOT NULL,
            attempts integer NOT NULL DEFAULT 0,
            not_before timestamptz NOT NULL DEFAULT now(),
            FOREIGN KEY (country, callback_id) REFERENCES callback (country, callback_id) ON DELETE CASCADE
        )
        """,
    ]
}
