// Migration 0005 of the `datadonation` database: which submission attempt redeemed a self-report OTP.

import ENPersistence

/// `one_time_password.redeemed_by`: the submission attempt that redeemed the OTP, which submission-service names when
/// it spends one (Shared/ServiceKit `Redemption`). Nullable: OTPs of other kinds, and those of the previous release,
/// have none.
struct RecordOTPRedemptions: DatabaseMigration {
    let name = "0005_record_otp_redemptions"
    let statements = ["ALTER TABLE one_time_password ADD COLUMN redeemed_by uuid"]
}
