// The counters an alert reads with increase() exist at 0 before anything is counted.

import ENModels
import ENServiceKit
import ENTestSupport
import Testing

@testable import TestResultService

@Suite("test-result-service metrics for alerts")
struct AlertMetricsTests {
    @Test("every kind and outcome of en_testresult_results_stored_total is exported at 0 before the first upload")
    func storedResultsStartAtZero() {
        let environment = ServiceEnvironment.testing()
        _ = TestResultMetrics(factory: environment.metricsFactory)
        let samples = environment.metricSamples("en_testresult_results_stored_total")
        for kind in ["pcr", "rapid_antigen", "pocnat"] {
            for outcome in ["inserted", "updated", "unchanged"] {
                #expect(
                    samples.contains { $0.labels == ["kind": kind, "outcome": outcome] && $0.value == 0 },
                    "kind \(kind), outcome \(outcome)"
                )
            }
        }
    }

    @Test("a stored result adds to its own label set, from 0")
    func storedResultCounts() {
        let environment = ServiceEnvironment.testing()
        let metrics = TestResultMetrics(factory: environment.metricsFactory)
        metrics.recordStore(StoreOutcome(inserted: 2, updated: 0, unchanged: 1), kind: .rapidAntigen)
        let samples = environment.metricSamples("en_testresult_results_stored_total")
        #expect(samples.first { $0.labels == ["kind": "rapid_antigen", "outcome": "inserted"] }?.value == 2)
        #expect(samples.first { $0.labels == ["kind": "rapid_antigen", "outcome": "unchanged"] }?.value == 1)
        #expect(samples.first { $0.labels == ["kind": "pcr", "outcome": "inserted"] }?.value == 0)
    }
}
