// Asks every readiness check, within a timeout, and records the verdict as `en_service_ready`.

package import Logging
package import Metrics
import Synchronization

/// The service's readiness: every check must answer within `timeout`. Each evaluation sets the gauge
/// `en_service_ready` (1 ready, 0 not), which `/health/ready` and every scrape of `/metrics` refresh, so the metric is
/// current whether or not an orchestrator probes the service.
package struct ReadinessProbe: Sendable {
    package static let gauge = "en_service_ready"

    private let checks: [any ReadinessCheck]
    private let timeout: Duration
    private let factory: any MetricsFactory

    package init(checks: [any ReadinessCheck], timeout: Duration = .seconds(2), factory: any MetricsFactory) {
        self.checks = checks
        self.timeout = timeout
        self.factory = factory
    }

    /// Each check's verdict by name, after recording the overall one.
    @discardableResult
    package func evaluate(logger: Logger) async -> [String: Bool] {
        var verdicts: [String: Bool] = [:]
        for check in self.checks {
            verdicts[check.name] = await self.run(check, logger: logger)
        }
        let ready = verdicts.values.allSatisfy { $0 }
        Gauge(label: Self.gauge, factory: self.factory).record(ready ? 1 : 0)
        return verdicts
    }

    /// The check's verdict, or `false` after `timeout`. The check runs in its own task, which is cancelled but
    /// not awaited on timeout: a query stuck on a dead connection must not hold the probe (a task group would
    /// wait for it).
    private func run(_ check: any ReadinessCheck, logger: Logger) async -> Bool {
        let timeout = self.timeout
        let verdict = FirstAnswer()
        return await withCheckedContinuation { continuation in
            let work = Task {
                do {
                    try await check.check(logger: logger)
                    verdict.answer(true, continuation)
                } catch {
                    logger.warning(
                        "Readiness check failed",
                        metadata: ["check": "\(check.name)", "error.type": "\(type(of: error))"]
                    )
                    verdict.answer(false, continuation)
                }
            }
            let timer = Task {
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                if verdict.answer(false, continuation) {
                    logger.warning("Readiness check timed out", metadata: ["check": "\(check.name)"])
                    work.cancel()
                }
            }
            // Once the check has answered, the timer has nothing left to do.
            Task {
                _ = await work.result
                timer.cancel()
            }
        }
    }
}

/// Resumes a continuation with the first answer only.
private final class FirstAnswer: Sendable {
    private let answered = Mutex(false)

    /// Resumes with `value` if nobody answered yet; returns whether this call did.
    @discardableResult
    func answer(_ value: Bool, _ continuation: CheckedContinuation<Bool, Never>) -> Bool {
        let first = self.answered.withLock { answered in
            defer { answered = true }
            return !answered
        }
        if first { continuation.resume(returning: value) }
        return first
    }
}
