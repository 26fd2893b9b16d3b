// The schema of the `keys` database, shared by every service that writes or reads diagnosis keys.

package import ENPersistence

/// The `keys` group: diagnosis keys, their federation mirror and check-ins. Submission applies it at start;
/// distribution and federation read and write the same tables.
package enum KeyStoreMigrations {
    package static let group = MigrationGroup(name: "keys", migrations: [CreateKeys()])
}
