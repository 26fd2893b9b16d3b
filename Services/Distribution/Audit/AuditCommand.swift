// `distribution-service audit`: the reconciliation of the key store and the published tree, for an operator.

import ArgumentParser
import Crypto
import ENKeyStore
import ENPersistence
import ENServiceKit
import Foundation
import Logging

/// `audit [--at <ISO 8601 time>] [--setting value …]`: reads the keys as a run at that time would (by default the
/// hour after the latest hour the tree lists, so the audit sees the tree as the last run left it), plans their
/// archives, reads every listed archive back from the store and prints, per folder, the keys due, the archives read
/// and the keys no listed archive holds, by period and origin. Exit 0 when nothing is missing, 1 when keys are missing
/// or a listed archive is unusable, 2 for a bad command line or configuration, or when the audit could not run (the
/// store or the database failed, or a run holds the lock).
struct AuditTool: ServiceTool {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract:
            "audit [--at <time>]: the keys the plan publishes that no listed archive holds (exit 0 none, 1 some, 2 could not audit)",
        discussion:
            "Reads the service's settings from the environment; a setting given as a flag (--cdn-directory <dir>) wins."
    )

    @Option(
        help: "Audit the tree as a run at this time (ISO 8601) planned it; default: as the last run left it.",
        transform: Self.time
    )
    var at: Date?

    @Argument(parsing: .allUnrecognized, help: "The service's settings as flags.")
    var settings: [String] = []

    func run(environment: [String: String]) async -> Int32 {
        await Distribution.audit(at: self.at, settings: self.settings, environment: environment)
    }

    private static func time(_ text: String) throws -> Date {
        guard let date = ISO8601DateFormatter().date(from: text) else {
            throw ValidationError("--at takes an ISO 8601 time, such as 2026-12-01T10:00:00Z")
        }
        return date
    }
}

extension Distribution {
    static func audit(at: Date?, settings: [String], environment: [String: String]) async -> Int32 {
        let ready: Startup<DistributionConfiguration>.Ready
        switch Self.start(arguments: ["distribution-service"] + settings, environment: environment) {
        case .exit(let code): return code
        case .ready(let value): ready = value
        }
        let logger = ready.environment.logger
        let configuration = ready.configuration
        do {
            let dependencies = Self.makeDependencies(configuration: configuration, logger: logger)
            return try await withRunningServices(dependencies.services) {
                let policy = configuration.policy
                let audit = TreeAudit(
                    store: dependencies.objectStore.store,
                    policy: policy,
                    publicKeys: configuration.signer.keys.map(\.privateKey.publicKey)
                )
                let now = DistributionTime.hour((at ?? dependencies.clock.now).timeIntervalSince1970)
                let latestListed = at == nil
                // Inside the run's lock: no run rewrites the tree or prunes the keys while it is read.
                let audited = try await dependencies.keys.withPublicationRun { run -> Audited? in
                    var hour = now
                    if latestListed {
                        guard let latest = try await audit.latestListedHour(today: DistributionTime.day(ofHour: now))
                        else { return nil }
                        hour = min(now, latest + (policy.includeIncompleteHours ? 0 : 1))
                    }
                    let fromHour = hour - Int64(policy.daysToPublish) * 24
                    let keys = try await run.keys(minimumTRL: policy.minimumTRL, fromHour: fromHour)
                    let plan = KeyBundler(policy: policy).bundle(keys, currentHour: hour)
                    return Audited(hour: hour, keysRead: keys.count, report: try await audit.audit(plan, hour: hour))
                }
                guard let locked = audited else {
                    print("audit: a distribution run holds the key store; try again when it has ended")
                    return 2
                }
                guard let audited = locked else {
                    print("audit: the tree of \(dependencies.objectStore.store.description) lists no key archive")
                    return 1
                }
                let (hour, report) = (audited.hour, audited.report)
                let day = DistributionTime.day(ofHour: hour)
                print(
                    "audit: \(dependencies.objectStore.store.description) as a run at \(DistributionTime.isoDate(day: day)) hour \(hour - day * 24) planned it, \(audited.keysRead) keys read"
                )
                for line in report.lines { print("audit: \(line)") }
                return report.missingCount > 0 || report.badArchiveCount > 0 ? 1 : 0
            }
        } catch {
            logger.critical("The audit could not run", metadata: ErrorMetadata.described(error))
            return 2
        }
    }

    /// What the audit found, and as of which hour.
    private struct Audited: Sendable {
        var hour: Int64
        var keysRead: Int
        var report: AuditReport
    }
}
