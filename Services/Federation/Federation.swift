// federation-service: key exchange with other countries through the EU federation gateway (cwa-server §5).

import ENPersistence
import ENServiceKit

/// The binary: `federation-service upload` and `download` run once and exit (0 success, 1 failure, 2 bad
/// configuration), for CronJobs; `federation-service serve` answers the gateway's callbacks and runs both jobs at
/// start and on their intervals (a callback starts a download at once), with `/health/*` and `/metrics`.
@main
enum Federation: ServiceEntrypoint {
    static let serviceName = "federation-service"
    /// Federation reads and writes the key store (its batch list included); submission, which owns it, applies its
    /// schema.
    static let migrationGroups: [MigrationGroup] = []
    static let defaultCommand: String? = nil
    static let commands: [ServiceCommand<Federation>] = [
        .job(
            "upload",
            summary: "one upload run, then exit (0 success, 1 failure, 2 bad configuration)",
            failure: "Upload run failed",
            Federation.uploadOnce
        ),
        .job(
            "download",
            summary: "one download run, then exit (0 success, 1 failure, 2 bad configuration)",
            failure: "Download run failed",
            Federation.downloadOnce
        ),
        .serve(
            summary: "the callback endpoint, and both runs at start and on their intervals, with /health/* and /metrics"
        ),
    ]
}
