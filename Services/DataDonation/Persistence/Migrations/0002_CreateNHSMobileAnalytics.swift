// Migration 0002 of group `datadonation`: NHS mobile analytics (nhs §10).

import ENPersistence

/// The daily packets and the events of NHS apps, after the privacy merge: the area is a merged postcode district and
/// its local authority (or `UNKNOWN`), the time only the day of submission. The 69 counters of a packet are one JSON
/// object (`null` where the app reported none), as the reference's stored payload is flat JSON. Retention deletes rows
/// older than `RETENTION_ANALYTICS`; the export reads them like the other analytics tables.
struct CreateNHSMobileAnalytics: DatabaseMigration {
    let name = "0002_create_nhs_mobile_analytics"
    let statements = [
        """
        CREATE TABLE nhs_mobile_analytics (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            submitted_at date NOT NULL,
            window_start timestamptz NOT NULL,
            window_end timestamptz NOT NULL,
            postal_district text NOT NULL,
            local_authority text NOT NULL,
            device_model text NOT NULL,
            operating_system_version text NOT NULL,
            latest_application_version text NOT NULL,
            includes_multiple_application_versions boolean NOT NULL,
            metrics jsonb NOT NULL CHECK (jsonb_typeof(metrics) = 'object')
        )
        """,
        "CREATE INDEX nhs_mobile_analytics_submitted ON nhs_mobile_analytics (submitted_at)",
        """
        CREATE TABLE nhs_mobile_analytics_event (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            submitted_at date NOT NULL,
            event_id uuid NOT NULL UNIQUE,
            postal_district text NOT NULL,
            local_authority text NOT NULL,
            device_model text NOT NULL,
            operating_system_version text NOT NULL,
            latest_application_version text NOT NULL,
            event_type text NOT NULL,
            event_version integer NOT NULL,
            payload jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object')
        )
        """,
        "CREATE INDEX nhs_mobile_analytics_event_submitted ON nhs_mobile_analytics_event (submitted_at)",
    ]
}
