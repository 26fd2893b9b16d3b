// Migration 0001 of group `keys`: diagnosis keys, their federation mirror, and check-ins (cwa-server §1.8, §1.10).

import ENPersistence

/// The reference schema in one step, with checks that keep the rows as valid as the submission rules left them,
/// `text` instead of `varchar(n)` (same storage, one type for parameters and columns), and two deliberate
/// changes:
///
/// - The federation mirror is kept by a trigger, as in the reference, so every writer of `diagnosis_key`
///   (submission, federation's download) gets the same rule, and the mirror commits with the key insert in the
///   same transaction by construction. Instead of the reference's delete trigger, the mirror
///   references the key with `ON DELETE CASCADE`, so retention removes both.
/// - The primary key `(key_data, submission_type)` also serves lookups by `key_data`, so the reference's
///   separate `key_data` index is not created.
///
/// The reference's second mirror, `chgs_upload_key` for the Swiss gateway, is not part of this schema.
struct CreateKeys: DatabaseMigration {
    let name = "0001_create_keys"
    let statements = [
        """
        CREATE TABLE diagnosis_key (
            key_data bytea NOT NULL CHECK (octet_length(key_data) = 16),
            submission_type text NOT NULL CHECK (submission_type ~ '^SUBMISSION_TYPE_[A-Z_]+$'),
            rolling_start_interval_number integer NOT NULL CHECK (rolling_start_interval_number > 0),
            rolling_period integer NOT NULL CHECK (rolling_period BETWEEN 1 AND 144),
            submission_timestamp bigint NOT NULL CHECK (submission_timestamp >= 0),
            transmission_risk_level integer NOT NULL CHECK (transmission_risk_level BETWEEN 1 AND 8),
            origin_country text NOT NULL CHECK (origin_country ~ '^[A-Z]{2}$'),
            visited_countries text[] NOT NULL,
            report_type text NOT NULL,
            days_since_onset_of_symptoms integer NOT NULL CHECK (days_since_onset_of_symptoms BETWEEN -15 AND 4000),
            consent_to_federation boolean NOT NULL DEFAULT false,
            PRIMARY KEY (key_data, submission_type)
        )
        """,
        "CREATE INDEX diagnosis_key_trl_submission ON diagnosis_key (transmission_risk_level, submission_timestamp)",
        "CREATE INDEX diagnosis_key_submission ON diagnosis_key (submission_timestamp)",
        """
        CREATE TABLE federation_upload_key (
            key_data bytea NOT NULL,
            submission_type text NOT NULL,
            rolling_start_interval_number integer NOT NULL,
            rolling_period integer NOT NULL,
            submission_timestamp bigint NOT NULL,
            transmission_risk_level integer NOT NULL,
            origin_country text NOT NULL,
            visited_countries text[] NOT NULL,
            report_type text NOT NULL,
            days_since_onset_of_symptoms integer NOT NULL,
            consent_to_federation boolean NOT NULL,
            batch_tag text,
            PRIMARY KEY (key_data, submission_type),
            FOREIGN KEY (key_data, submission_type) REFERENCES diagnosis_key (key_data, submission_type) ON DELETE CASCADE
        )
        """,
        "CREATE INDEX federation_upload_key_pending ON federation_upload_key (submission_timestamp) WHERE batch_tag IS NULL",
        """
        CREATE FUNCTION mirror_uploadable_key() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO federation_upload_key (
                key_data, submission_type, rolling_start_interval_number, rolling_period, submission_timestamp,
                transmission_risk_level, origin_country, visited_countries, report_type, days_since_onset_of_symptoms,
                consent_to_federation
            ) VALUES (
                NEW.key_data, NEW.submission_type, NEW.rolling_start_interval_number, NEW.rolling_period,
                NEW.submission_timestamp, NEW.transmission_risk_level, NEW.origin_country, NEW.visited_countries,
                NEW.report_type, NEW.days_since_onset_of_symptoms, NEW.consent_to_federation
            ) ON CONFLICT DO NOTHING;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER mirror_uploadable_key AFTER INSERT ON diagnosis_key FOR EACH ROW
        WHEN (NEW.consent_to_federation AND NEW.submission_type = 'SUBMISSION_TYPE_PCR_TEST')
        EXECUTE FUNCTION mirror_uploadable_key()
        """,
        """
        CREATE TABLE check_in_protected_reports (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            trace_location_id_hash bytea NOT NULL CHECK (octet_length(trace_location_id_hash) = 32),
            initialization_vector bytea NOT NULL CHECK (octet_length(initialization_vector) = 16),
            encrypted_check_in_record bytea NOT NULL CHECK (octet_length(encrypted_check_in_record) = 16),
            mac bytea NOT NULL CHECK (octet_length(mac) = 32),
            submission_timestamp bigint NOT NULL CHECK (submission_timestamp >= 0),
            CONSTRAINT check_in_protected_reports_unique UNIQUE (mac, initialization_vector, encrypted_check_in_record, trace_location_id_hash)
        )
        """,
        "CREATE INDEX check_in_protected_reports_submission ON check_in_protected_reports (submission_timestamp)",
        """
        CREATE TABLE trace_time_interval_warning (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            trace_location_id bytea NOT NULL CHECK (octet_length(trace_location_id) = 32),
            start_interval_number integer NOT NULL CHECK (start_interval_number >= 0),
            period integer NOT NULL CHECK (period >= 0),
            transmission_risk_level integer NOT NULL CHECK (transmission_risk_level BETWEEN 1 AND 8),
            submission_timestamp bigint NOT NULL CHECK (submission_timestamp >= 0),
            submission_type text NOT NULL CHECK (submission_type ~ '^SUBMISSION_TYPE_[A-Z_]+$')
        )
        """,
        "CREATE INDEX trace_time_interval_warning_submission ON trace_time_interval_warning (submission_timestamp)",
    ]
}
