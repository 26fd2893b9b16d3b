// The ordered schema history of test-result-service.

import ENPersistence

/// Group `testresult`. Append new migrations; never edit or reorder applied ones.
enum TestResultMigrations {
    static let group = MigrationGroup(name: "testresult", migrations: [CreateTestResult(), AddResultProtection()])
}
