// The service's own metrics, prefixed `en_testresult_`.

import ENModels
import Metrics

/// Counters of what the service did; labels are low-cardinality (test kind, outcome).
struct TestResultMetrics: Sendable {
    private let factory: any MetricsFactory

    /// Registers every label set of the stored results at 0: a counter that first appeared at 1 would show no
    /// `increase()`, and `LabUploadsStopped` (deploy/observability/alerts.yaml) would go on firing after the first
    /// upload.
    init(factory: any MetricsFactory) {
        self.factory = factory
        for kind in TestKind.allCases {
            for outcome in Self.storeOutcomes {
                _ = self.storedCounter(kind: kind, outcome: outcome)
            }
        }
    }

    private static let storeOutcomes = ["inserted", "updated", "unchanged"]

    private func storedCounter(kind: TestKind, outcome: String) -> Counter {
        Counter(
            label: "en_testresult_results_stored_total",
            dimensions: [("kind", Self.label(kind)), ("outcome", outcome)],
            factory: self.factory
        )
    }

    /// Results received in batch uploads, by kind and whether they were inserted, updated or left (redeemed).
    func recordStore(_ outcome: StoreOutcome, kind: TestKind) {
        for (name, count) in zip(Self.storeOutcomes, [outcome.inserted, outcome.updated, outcome.unchanged])
        where count > 0 {
            self.storedCounter(kind: kind, outcome: name).increment(by: count)
        }
    }

    /// A lookup by verification or a portal.
    func recordLookup(caller: String) {
        Counter(label: "en_testresult_lookups_total", dimensions: [("caller", caller)], factory: self.factory)
            .increment()
    }

    /// Rows masked and deleted by retention.
    func recordRetention(_ outcome: TestResultRetentionOutcome) {
        Counter(label: "en_testresult_retention_masked_total", factory: self.factory).increment(by: outcome.masked)
        Counter(label: "en_testresult_retention_deleted_total", factory: self.factory).increment(by: outcome.deleted)
        Counter(label: "en_testresult_nhs_retention_deleted_total", factory: self.factory)
            .increment(by: outcome.nhsDeleted)
    }

    private static func label(_ kind: TestKind) -> String {
        switch kind {
        case .pcr: "pcr"
        case .rapidAntigen: "rapid_antigen"
        case .pointOfCareNAT: "pocnat"
        }
    }
}
