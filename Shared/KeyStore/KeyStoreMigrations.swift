// The schema of the `keys` database, shared by every service that writes or reads diagnosis keys.

package import ENPersistence

/// The `keys` group: diagnosis keys, their federation mirror, the federation batch list, check-ins and the count of
/// self-report submissions. Submission applies it at start; distribution reads and deletes the key tables through
/// `DiagnosisKeyRepository`, federation reads and writes the key tables and its batch list.
package enum KeyStoreMigrations {
    package static let group = MigrationGroup(
        name: "keys",
        migrations: [
            CreateKeys(), CreateFederationBatchInfo(), CreateSelfReportSubmissions(), MarkNHSAppKeys(),
            CreatePendingSubmission(),
        ]
    )
}
