// Migration 0010 of the `verification` database: which submission spent a TAN or an NHS order's submission.

import ENPersistence

/// `tan.redeemed_by` and `nhs_virology_order.submitted_by`: the id of the submission attempt that spent it, which
/// submission-service sends along and writes its keys under before it spends the credential. A repeat of the same
/// attempt is answered as its first call was, and submission-service can ask afterwards which attempt spent a
/// credential, so an attempt whose answer or whose write was lost is completed instead of losing its keys
/// (Services/Submission/README.md, "Order of work"). Nullable, for rows of the previous release.
struct RecordRedemptions: DatabaseMigration {
    let name = "0010_record_redemptions"
    let statements = [
        "ALTER TABLE tan ADD COLUMN redeemed_by uuid",
        "ALTER TABLE nhs_virology_order ADD COLUMN submitted_by uuid",
    ]
}
