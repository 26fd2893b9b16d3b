// The counters an alert reads with increase() exist at 0 before anything is counted.

import ENServiceKit
import ENTestSupport
import Foundation
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

    @Test("every kind's circuit-breaker request outcomes, held_by_rule among them, are exported at 0 before a request")
    func circuitBreakerHoldsStartAtZero() {
        let environment = ServiceEnvironment.testing()
        _ = NHSCircuitBreakerController(
            store: InMemoryNHSCircuitBreakerRepository(),
            settings: NHSCircuitBreakerSettings(settings: SettingsReader(values: [:])),
            clock: WallClock { Date(timeIntervalSince1970: 1_800_000_000) },
            metrics: environment.metricsFactory
        )
        let samples = environment.metricSamples("en_verification_nhs_circuit_breaker_total")
        for kind in ["exposure-notification", "venue"] {
            for outcome in ["yes", "no", "pending", "held_by_rule"] {
                #expect(
                    samples.contains {
                        $0.labels == ["kind": kind, "action": "request", "outcome": outcome] && $0.value == 0
                    },
                    "kind \(kind), outcome \(outcome)"
                )
            }
        }
    }
}
