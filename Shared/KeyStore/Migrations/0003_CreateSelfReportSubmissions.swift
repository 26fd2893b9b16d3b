// Migration 0003 of group `keys`: one row per stored self-report submission (cwa-server §1.8).

import ENPersistence

/// The reference's `self_report_submissions` and its `self_reports` view (its V24). A row holds the submission
/// type and the UTC day only, so the table counts self-reports per day and type without telling which keys came
/// with which report. Unlike the reference, `submission_date` has no `CURRENT_DATE` default: the writer always sets
/// the UTC day of the submission, which must not depend on the session's time zone.
struct CreateSelfReportSubmissions: DatabaseMigration {
    let name = "0003_create_self_report_submissions"
    let statements = [
        """
        CREATE TABLE self_report_submissions (
            submission_type text NOT NULL CHECK (submission_type ~ '^SUBMISSION_TYPE_SRS_[A-Z_]+$'),
            submission_date date NOT NULL
        )
        """,
        "CREATE INDEX self_report_submissions_date ON self_report_submissions (submission_date)",
        """
        CREATE VIEW self_reports AS
            SELECT count(*), submission_date, submission_type
              FROM self_report_submissions
             GROUP BY submission_date, submission_type
        """,
    ]
}
