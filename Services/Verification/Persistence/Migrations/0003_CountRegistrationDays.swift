// Migration 0003 of group `verification`: registrations counted per UTC day, for the daily cap.

import ENPersistence

/// One row per UTC day with the number of sessions created on it. A registration increments its day's row in its
/// own transaction, conditionally on the cap, so the cap holds across replicas; retention deletes old days.
struct CountRegistrationDays: DatabaseMigration {
    let name = "0003_count_registration_days"
    let statements = [
        """
        CREATE TABLE registration_day (
            day date PRIMARY KEY,
            created bigint NOT NULL CHECK (created >= 0)
        )
        """
    ]
}
