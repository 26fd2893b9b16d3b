// Deleting what has outlived its retention, on one replica at a time.

package import Logging

/// One retention pass: `apply` deletes (or masks) what is due under a cluster-wide lock and returns what it did, or
/// `nil` when another replica holds the lock and is doing it now.
package struct RetentionPass<Outcome: Sendable>: Sendable {
    private let name: String
    private let logger: Logger
    private let apply: @Sendable () async throws -> Outcome?
    private let describe: @Sendable (Outcome) -> Logger.Metadata

    /// - Parameters:
    ///   - name: the task's name in logs (`testresult.retention`).
    ///   - describe: the counts of an outcome, as log metadata.
    package init(
        name: String,
        logger: Logger,
        apply: @escaping @Sendable () async throws -> Outcome?,
        describe: @escaping @Sendable (Outcome) -> Logger.Metadata
    ) {
        self.name = name
        self.logger = logger
        self.apply = apply
        self.describe = describe
    }

    /// Runs the pass once; returns its outcome, or `nil` when another replica ran it.
    @discardableResult
    package func run() async throws -> Outcome? {
        guard let outcome = try await self.apply() else {
            self.logger.debug("Retention skipped: another replica is running it", metadata: ["task": "\(self.name)"])
            return nil
        }
        self.logger.info("Retention applied", metadata: self.describe(outcome))
        return outcome
    }

    /// The pass at start and then `interval` after each run ends, as a service of the application.
    package func periodic(every interval: Duration) -> PeriodicTask {
        PeriodicTask(name: self.name, interval: interval, logger: self.logger) {
            try await self.run()
        }
    }
}
