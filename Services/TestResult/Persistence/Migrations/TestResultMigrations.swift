// The ordered schema history of test-result-service.

import ENNHS
import ENPersistence
import ENServiceKit

/// Group `testresult`. Append new migrations; never edit or reorder applied ones.
enum TestResultMigrations {
    static let group = MigrationGroup(
        name: "testresult",
        migrations: [
            CreateTestResult(), AddResultProtection(), CreateNHSVirologyResult(),
            CreateNHSAPIKey(), StoreNHSAPIKeyDigests(),
        ]
    )
}
