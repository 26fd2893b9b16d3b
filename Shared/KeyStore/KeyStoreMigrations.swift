// The schema of the `keys` database, shared by every service that writes or reads diagnosis keys.

package import ENPersistence

/// The `keys` group: diagnosis keys, their federation mirror and check-ins. Submission applies it at start;
/// distribution reads and deletes the same tables through `DiagnosisKeyRepository`.
package enum KeyStoreMigrations {
    package static let group = MigrationGroup(name: "keys", migrations: [CreateKeys()])
}
