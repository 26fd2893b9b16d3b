// The counters an alert reads with increase() exist at 0 before anything is counted.

import ENServiceKit
import ENTestSupport
import Testing

@testable import VerificationService

@Suite("verification-service metrics for alerts")
struct AlertMetricsTests {
    @Test("every key type and outcome of en_verification_registrations_total is exported at 0 before a registration")
    func registrationsStartAtZero() {
        let environment = ServiceEnvironment.testing()
        let metrics = VerificationMetrics(factory: environment.metricsFactory)
        var samples = environment.metricSamples("en_verification_registrations_total")
        for keyType in ["guid", "teletan"] {
            for outcome in ["created", "rejected", "capped"] {
                #expect(
                    samples.contains { $0.labels == ["key_type": keyType, "outcome": outcome] && $0.value == 0 },
                    "key type \(keyType), outcome \(outcome)"
                )
            }
        }
        // The first capped registration is then an increase of 1, which RegistrationsCapped sees.
        metrics.recordRegistration(keyType: "teletan", outcome: "capped")
        samples = environment.metricSamples("en_verification_registrations_total")
        #expect(samples.first { $0.labels == ["key_type": "teletan", "outcome": "capped"] }?.value == 1)
        #expect(samples.first { $0.labels == ["key_type": "guid", "outcome": "capped"] }?.value == 0)
    }
}
