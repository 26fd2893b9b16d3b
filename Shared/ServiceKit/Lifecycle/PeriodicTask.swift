// Background work repeated at an interval, stopped promptly by graceful shutdown.

import ENPersistence
package import Logging
import ServiceLifecycle

/// Runs `work` at start and then again after each pause: `interval` after each run ends, or whatever `pause` waits
/// for (an interval or an earlier signal). A failing run is logged and retried at the next turn; the loop ends as
/// soon as the service group shuts down (the pause and the running work are cancelled).
package struct PeriodicTask: Service {
    private let name: String
    private let logger: Logger
    private let pause: @Sendable () async -> Void
    private let work: @Sendable () async throws -> Void

    package init(name: String, interval: Duration, logger: Logger, work: @escaping @Sendable () async throws -> Void) {
        self.init(name: name, logger: logger, pause: { try? await Task.sleep(for: interval) }, work: work)
    }

    /// `pause` returns when the next run is due; it must return when its task is cancelled.
    package init(
        name: String,
        logger: Logger,
        pause: @escaping @Sendable () async -> Void,
        work: @escaping @Sendable () async throws -> Void
    ) {
        self.name = name
        self.logger = logger
        self.pause = pause
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
                await self.pause()
            }
        }
    }
}
