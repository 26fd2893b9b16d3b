// The counters an alert reads with increase() exist at 0 before anything is counted.

import ENServiceKit
import ENTestSupport
import Testing

@testable import DistributionService

@Suite("distribution-service metrics for alerts")
struct AlertMetricsTests {
    @Test("en_distribution_audit_failures_total is exported at 0 before the first run")
    func auditFailuresStartAtZero() {
        let environment = ServiceEnvironment.testing()
        _ = DistributionMetrics(factory: environment.metricsFactory)
        #expect(
            environment.metricSamples("en_distribution_audit_failures_total")
                == [MetricSample(name: "en_distribution_audit_failures_total", labels: [:], value: 0)]
        )
    }
}
