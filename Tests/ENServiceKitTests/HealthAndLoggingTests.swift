// Readiness, liveness and the JSON log format.

import ENServiceKit
import ENTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Metrics
import MetricsTestKit
import Testing

@Suite("Health and logging")
struct HealthAndLoggingTests {
    struct Check: ReadinessCheck {
        let name: String
        let behaviour: Behaviour
        enum Behaviour: Sendable { case pass, fail, hang }

        func check(logger: Logger) async throws {
            switch self.behaviour {
            case .pass: return
            case .fail: throw CancellationError()
            case .hang: try await Task.sleep(for: .seconds(3600))
            }
        }
    }

    static func app(
        _ checks: [any ReadinessCheck],
        metrics: any MetricsFactory = TestMetrics()
    ) -> some ApplicationProtocol {
        let router = Router(context: ServiceRequestContext.self)
        let probe = ReadinessProbe(checks: checks, timeout: .milliseconds(200), factory: metrics)
        HealthController(probe: probe).addRoutes(to: router)
        return Application(router: router)
    }

    @Test("each readiness probe records en_service_ready: 1 when ready, 0 when a check fails")
    func readinessGauge() async throws {
        let up = TestMetrics()
        let down = TestMetrics()
        #expect(throws: (any Error).self) { try up.expectGauge(ReadinessProbe.gauge) }
        try await Self.app([Check(name: "database", behaviour: .pass)], metrics: up).test(.router) { client in
            _ = try await client.execute(uri: "/health/ready", method: .get)
        }
        try await Self.app([Check(name: "database", behaviour: .fail)], metrics: down).test(.router) { client in
            _ = try await client.execute(uri: "/health/ready", method: .get)
        }
        #expect(try up.expectGauge(ReadinessProbe.gauge).lastValue == 1)
        #expect(try down.expectGauge(ReadinessProbe.gauge).lastValue == 0)
    }

    @Test("a scrape of the metrics listener evaluates readiness first, so en_service_ready is current")
    func scrapeEvaluatesReadiness() async throws {
        let environment = ServiceEnvironment.testing()
        let check = Check(name: "database", behaviour: .fail)
        let app = Application(router: MetricsListener.router(environment: environment, checks: [check]))
        try await app.test(.router) { client in
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(metrics.body.text.contains("en_service_ready 0"))
        }
    }

    @Test("ready when every check passes; 503 naming the failing check otherwise; live regardless")
    func readiness() async throws {
        let up = Self.app([Check(name: "database", behaviour: .pass)])
        let down = Self.app([Check(name: "database", behaviour: .pass), Check(name: "peer", behaviour: .fail)])

        try await up.test(.router) { client in
            let ready = try await client.execute(uri: "/health/ready", method: .get)
            #expect(ready.status == .ok)
            #expect(ready.body.text == #"{"check.database":"up","status":"up"}"#)
        }
        try await down.test(.router) { client in
            let ready = try await client.execute(uri: "/health/ready", method: .get)
            let live = try await client.execute(uri: "/health/live", method: .get)
            #expect(ready.status == .serviceUnavailable)
            #expect(ready.body.text == #"{"check.database":"up","check.peer":"down","status":"down"}"#)
            #expect(live.status == .ok)
        }
    }

    @Test("a check that never answers counts as down instead of hanging the probe")
    func hangingCheck() async throws {
        try await Self.app([Check(name: "database", behaviour: .hang)]).test(.router) { client in
            let ready = try await client.execute(uri: "/health/ready", method: .get)
            #expect(ready.status == .serviceUnavailable)
        }
    }

    @Test("the metrics listener serves GET /metrics and nothing else: no API, no health")
    func metricsListener() async throws {
        let environment = ServiceEnvironment.testing()
        Counter(label: "en_probe_total", factory: environment.metricsFactory).increment()
        let app = Application(router: MetricsListener.router(environment: environment, checks: []))
        try await app.test(.router) { client in
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            let api = try await client.execute(uri: "/version/v1/tan", method: .post)
            let health = try await client.execute(uri: "/health/ready", method: .get)

            #expect(metrics.status == .ok)
            #expect(metrics.body.text.contains("en_probe_total 1"))
            #expect(api.status == .notFound)
            #expect(health.status == .notFound)
        }
    }

    @Test(
        "en_db_pool_lease_timeouts_total is exported at 0 by a router with the standard middleware, before any timeout"
    )
    func leaseTimeoutsStartAtZero() {
        let environment = ServiceEnvironment.testing()
        #expect(environment.metricSamples("en_db_pool_lease_timeouts_total").isEmpty)
        let router = Router()
        router.addStandardMiddleware(maxBodyBytes: 1024, metricsFactory: environment.metricsFactory)
        #expect(
            environment.metricSamples("en_db_pool_lease_timeouts_total")
                == [MetricSample(name: "en_db_pool_lease_timeouts_total", labels: [:], value: 0)]
        )
    }

    @Test("METRICS_PORT must differ from the service's other ports; port 0 is always allowed")
    func metricsPort() throws {
        let clash = SettingsReader(values: ["METRICS_PORT": "8001"])
        _ = MetricsListener.address(
            settings: clash,
            defaultPort: 9001,
            otherListeners: [ListenAddress(host: "127.0.0.1", port: 8001)]
        )
        #expect(throws: ConfigurationError.self) { try clash.finish() }
        let free = SettingsReader(values: ["METRICS_PORT": "0"])
        let address = MetricsListener.address(
            settings: free,
            defaultPort: 9001,
            otherListeners: [ListenAddress(host: "127.0.0.1", port: 0)]
        )
        #expect(throws: Never.self) { try free.finish() }
        #expect(address.port == 0)
    }

    @Test("JSON log lines are one object each with level, label, message and dotted metadata")
    func jsonLines() throws {
        let lines = Mutexed<[String]>([])
        var logger = Logger(label: "svc") { label in
            JSONLogHandler(label: label, level: .debug, write: { line in lines.withLock { $0.append(line) } })
        }
        logger[metadataKey: "request.id"] = "r-1"

        logger.info("Results stored", metadata: ["results.inserted": "3"])
        logger.trace("not written")

        #expect(lines.value.count == 1)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(lines.value[0].utf8)) as? [String: String]
        )
        #expect(object["level"] == "info")
        #expect(object["label"] == "svc")
        #expect(object["message"] == "Results stored")
        #expect(object["request.id"] == "r-1")
        #expect(object["results.inserted"] == "3")
        #expect(object["time"]?.hasSuffix("Z") == true)
        #expect(!lines.value[0].contains("\n"))
    }
}
