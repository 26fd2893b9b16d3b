// Migration 0001 of group `datadonation`: the analytics tables, the OTPs, and what attestation remembers.

import ENNHS
import ENPersistence
import ENServiceKit

/// The tables of cwa-satellites §4.4. The analytics rows carry only the date they were submitted on: no time, no
/// device, no request. The user and client metadata are copied into each analytics row (as the reference's
/// `…_with_user_metadata` tables do), so an analyst needs no join, and there is no key that links two rows of one
/// donation. Exposure windows keep their scan instances as three arrays (1 to 15 entries, §4.4) instead of a table
/// of their own. Secrets are stored as SHA-256 hex (OTPs, API tokens, device tokens, salts) or as an HMAC under a
/// pepper (Android IDs, whose range is small enough to enumerate).
struct CreateDataDonation: DatabaseMigration {
    let name = "0001_create_datadonation"
    let statements = [
        """
        CREATE TABLE exposure_risk_metadata (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            submitted_at date NOT NULL,
            platform text NOT NULL CHECK (platform IN ('android', 'ios')),
            risk_level smallint NOT NULL CHECK (risk_level BETWEEN 0 AND 3),
            risk_level_changed boolean NOT NULL,
            most_recent_date_at_risk_level date,
            date_changed boolean NOT NULL,
            pt_risk_level smallint NOT NULL CHECK (pt_risk_level BETWEEN 0 AND 3),
            pt_risk_level_changed boolean NOT NULL,
            pt_most_recent_date_at_risk_level date,
            pt_date_changed boolean NOT NULL,
            federal_state smallint,
            administrative_unit integer,
            age_group smallint
        )
        """,
        "CREATE INDEX exposure_risk_metadata_submitted_at ON exposure_risk_metadata (submitted_at)",
        """
        CREATE TABLE test_result_metadata (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            submitted_at date NOT NULL,
            platform text NOT NULL CHECK (platform IN ('android', 'ios')),
            test_result smallint NOT NULL CHECK (test_result BETWEEN 0 AND 8),
            hours_since_test_registration integer NOT NULL,
            risk_level_at_test_registration smallint NOT NULL CHECK (risk_level_at_test_registration BETWEEN 0 AND 3),
            days_since_most_recent_date_at_risk_level integer NOT NULL,
            hours_since_high_risk_warning integer NOT NULL,
            pt_risk_level_at_test_registration smallint NOT NULL CHECK (pt_risk_level_at_test_registration BETWEEN 0 AND 3),
            pt_days_since_most_recent_date_at_risk_level integer NOT NULL,
            pt_hours_since_high_risk_warning integer NOT NULL,
            federal_state smallint,
            administrative_unit integer,
            age_group smallint
        )
        """,
        "CREATE INDEX test_result_metadata_submitted_at ON test_result_metadata (submitted_at)",
        """
        CREATE TABLE key_submission_metadata (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            submitted_at date NOT NULL,
            platform text NOT NULL CHECK (platform IN ('android', 'ios')),
            submitted boolean NOT NULL,
            submitted_in_background boolean NOT NULL,
            submitted_after_cancel boolean NOT NULL,
            submitted_after_symptom_flow boolean NOT NULL,
            advanced_consent_given boolean NOT NULL,
            last_submission_flow_screen smallint NOT NULL CHECK (last_submission_flow_screen BETWEEN 0 AND 5),
            hours_since_test_result integer NOT NULL,
            hours_since_test_registration integer NOT NULL,
            days_since_most_recent_date_at_risk_level integer NOT NULL,
            hours_since_high_risk_warning integer NOT NULL,
            submitted_with_teletan boolean NOT NULL,
            submitted_after_rapid_antigen_test boolean NOT NULL,
            pt_days_since_most_recent_date_at_risk_level integer NOT NULL,
            pt_hours_since_high_risk_warning integer NOT NULL,
            submitted_with_check_ins boolean,
            submission_type smallint NOT NULL CHECK (submission_type BETWEEN 0 AND 7),
            federal_state smallint,
            administrative_unit integer,
            age_group smallint
        )
        """,
        "CREATE INDEX key_submission_metadata_submitted_at ON key_submission_metadata (submitted_at)",
        """
        CREATE TABLE exposure_window (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            submitted_at date NOT NULL,
            platform text NOT NULL CHECK (platform IN ('android', 'ios')),
            context text NOT NULL CHECK (context IN ('new', 'at_test_registration', 'until_test_result')),
            test_result smallint CHECK (test_result BETWEEN 0 AND 8),
            date date,
            report_type smallint NOT NULL CHECK (report_type BETWEEN 0 AND 5),
            infectiousness smallint NOT NULL CHECK (infectiousness BETWEEN 0 AND 2),
            calibration_confidence integer NOT NULL,
            transmission_risk_level integer NOT NULL,
            normalized_time double precision NOT NULL,
            typical_attenuations integer[] NOT NULL,
            min_attenuations integer[] NOT NULL,
            seconds_since_last_scans integer[] NOT NULL,
            CHECK (cardinality(typical_attenuations) BETWEEN 1 AND 15),
            CHECK (cardinality(min_attenuations) = cardinality(typical_attenuations)),
            CHECK (cardinality(seconds_since_last_scans) = cardinality(typical_attenuations))
        )
        """,
        "CREATE INDEX exposure_window_submitted_at ON exposure_window (submitted_at)",
        """
        CREATE TABLE client_metadata (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            submitted_at date NOT NULL,
            platform text NOT NULL CHECK (platform IN ('android', 'ios')),
            cwa_version text NOT NULL,
            os_version text,
            android_api_level bigint,
            enf_version bigint,
            app_config_etag text NOT NULL
        )
        """,
        "CREATE INDEX client_metadata_submitted_at ON client_metadata (submitted_at)",
        """
        CREATE TABLE one_time_password (
            otp_hash text PRIMARY KEY CHECK (otp_hash ~ '^[0-9a-f]{64}$'),
            kind text NOT NULL CHECK (kind IN ('survey', 'error_log', 'self_report')),
            platform text NOT NULL CHECK (platform IN ('android', 'ios')),
            expires_at timestamptz NOT NULL,
            redeemed_at timestamptz,
            basic_integrity boolean,
            cts_profile_match boolean,
            evaluation_type_basic boolean,
            evaluation_type_hardware_backed boolean
        )
        """,
        "CREATE INDEX one_time_password_expires_at ON one_time_password (expires_at)",
        """
        CREATE TABLE salt (
            salt_hash text PRIMARY KEY CHECK (salt_hash ~ '^[0-9a-f]{64}$'),
            created_at timestamptz NOT NULL
        )
        """,
        "CREATE INDEX salt_created_at ON salt (created_at)",
        """
        CREATE TABLE android_id (
            id_hash text PRIMARY KEY,
            expires_at timestamptz NOT NULL
        )
        """,
        """
        CREATE TABLE api_token (
            token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
            expiration_date date NOT NULL,
            created_at timestamptz NOT NULL,
            last_used_analytics timestamptz,
            last_used_survey timestamptz,
            last_used_self_report timestamptz
        )
        """,
        """
        CREATE TABLE device_token (
            token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
            created_at timestamptz NOT NULL
        )
        """,
        "CREATE INDEX device_token_created_at ON device_token (created_at)",
        // The analysts' read-only role (§4.5): SELECT on the analytics tables, nothing on OTPs, tokens, salts or
        // Android IDs. Created when the migrating user may create roles; otherwise an operator creates it (see
        // the README) and the grant is made when it exists.
        """
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'datadonation_analyst') THEN
                BEGIN
                    CREATE ROLE datadonation_analyst NOLOGIN;
                EXCEPTION WHEN insufficient_privilege THEN
                    RAISE NOTICE 'datadonation_analyst not created: no CREATEROLE privilege';
                END;
            END IF;
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'datadonation_analyst') THEN
                EXECUTE format('GRANT CONNECT ON DATABASE %I TO datadonation_analyst', current_database());
                GRANT SELECT ON exposure_risk_metadata, test_result_metadata, key_submission_metadata,
                    exposure_window, client_metadata TO datadonation_analyst;
            END IF;
        END
        $$
        """,
    ]
}

/// The migrations of the `datadonation` database, in order.
enum DataDonationMigrations {
    static let group = MigrationGroup(
        name: "datadonation",
        migrations: [
            CreateDataDonation(), CreateNHSMobileAnalytics(), CreateNHSAPIKey(),
            GrantNHSMobileAnalytics(), RecordOTPRedemptions(), StoreNHSAPIKeyDigests(),
        ]
    )
}
