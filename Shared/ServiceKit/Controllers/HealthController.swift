// `/health/live` and `/health/ready`, for orchestrators and `make run`.

import Foundation
package import Hummingbird
import Logging
import Synchronization

/// Liveness says the process serves HTTP; readiness also checks every dependency within `timeout`.
package struct HealthController<Context: RequestContext>: Sendable {
    private let checks: [any ReadinessCheck]
    private let timeout: Duration

    package init(checks: [any ReadinessCheck], timeout: Duration = .seconds(2)) {
        self.checks = checks
        self.timeout = timeout
    }

    package func addRoutes(to router: Router<Context>) {
        let live = Self.json(.ok, ["status": "up"])
        router.get("/health/live") { _, _ in live }
        router.get("/health/ready") { _, context in await self.ready(logger: context.logger) }
    }

    /// GET /health/ready — 200 when every check passes, else 503; the body names each check's state.
    private func ready(logger: Logger) async -> Response {
        var states: [String: String] = [:]
        for check in self.checks {
            states[check.name] = await self.run(check, logger: logger) ? "up" : "down"
        }
        let up = states.values.allSatisfy { $0 == "up" }
        var body: [String: String] = ["status": up ? "up" : "down"]
        for (name, state) in states { body["check.\(name)"] = state }
        return Self.json(up ? .ok : .serviceUnavailable, body)
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

    private static func json(_ status: HTTPResponse.Status, _ body: [String: String]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
        return Response(
            status: status,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
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
