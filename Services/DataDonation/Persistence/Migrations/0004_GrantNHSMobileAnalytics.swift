// Migration 0004 of group `datadonation`: the analysts read the NHS mobile analytics too.

import ENPersistence

/// `SELECT` on the two NHS tables for the analysts' read-only role, when it exists (migration 0001 creates it when it
/// can; otherwise the owner grants by hand, Services/DataDonation/README.md).
struct GrantNHSMobileAnalytics: DatabaseMigration {
    let name = "0004_grant_nhs_mobile_analytics"
    let statements = [
        """
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'datadonation_analyst') THEN
                GRANT SELECT ON nhs_mobile_analytics, nhs_mobile_analytics_event TO datadonation_analyst;
            END IF;
        END
        $$
        """
    ]
}
