// distribution-service: assembles, signs and publishes the CDN tree phones download (cwa-server §3).

import ENPersistence
import ENServiceKit

/// The binary: `distribution-service run` does one run and exits (0 on success, 1 on failure, 2 on bad
/// configuration), for a CronJob; `distribution-service serve` runs at start and again `DISTRIBUTION_INTERVAL` after
/// each run ends, and serves `/health/*` and `/metrics`.
@main
enum Distribution: ServiceEntrypoint {
    static let serviceName = "distribution-service"
    /// Distribution reads and prunes the key store; submission, which writes it, applies its schema.
    static let migrationGroups: [MigrationGroup] = []
    static let defaultCommand: String? = nil
    static let histogramBuckets = [
        DistributionMetrics.publicationLatency: DistributionMetrics.publicationLatencyBuckets
    ]
    static let commands: [ServiceCommand<Distribution>] = [
        .job(
            "run",
            summary: "one distribution run, then exit (0 success, 1 failure, 2 bad configuration)",
            failure: "Distribution run failed",
            Distribution.runOnce
        ),
        .serve(summary: "a run at start and every DISTRIBUTION_INTERVAL, with /health/* and /metrics"),
        .tool(AuditTool.self),
        .tool(PublishTool.self),
    ]
}
