// Background work repeated at an interval, stopped promptly by graceful shutdown.

import ENPersistence
package import Logging
import ServiceLifecycle

/// Runs `work` at start and then `interval` after each run ends. A failing run is logged and retried at the next
/// turn; the loop ends as soon as the service group shuts down (the sleep and the running work are cancelled).
package struct PeriodicTask: Service {
    private let name: String
    private let interval: Duration
    private let logger: Logger
    private let work: @Sendable () async throws -> Void

    package init(name: String, interval: Duration, logger: Logger, work: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.work = work
    }

    package func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await self.work()
                } catch {
                    // Shutdown cancels the running work; whatever it throws then is not a failure.
                    if Task.isCancelled { return }
                    self.logger.error(
                        "Periodic task failed",
                        metadata: ErrorMetadata.of(error).merging(["task": "\(self.name)"]) { _, new in new }
                    )
                }
                try? await Task.sleep(for: self.interval)
            }
        }
    }
}
