// Migration 0002 of group `testresult`: date-of-birth protection of a result.

import ENPersistence

/// A lab may mark a result as protected by the date of birth (our extension of the lab API): verification-service
/// then requires the matching DOB hash before it shows the result or issues a TAN.
struct AddResultProtection: DatabaseMigration {
    let name = "0002_add_result_protection"
    let statements = [
        "ALTER TABLE test_result ADD COLUMN dob_protected boolean NOT NULL DEFAULT false"
    ]
}
