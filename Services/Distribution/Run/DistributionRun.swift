// One distribution run: retention, assembly, signing and publishing, under a cluster-wide lock (cwa-server §3.1).

import Crypto
import ENKeyStore
import ENModels
import ENPersistence
import ENServiceKit
import Foundation
import Logging
import SwiftProtobuf

/// What a completed run did.
struct RunReport: Sendable, Equatable {
    var retention = KeyRetentionOutcome()
    var objectsDeleted = 0
    var keysRead = 0
    var checkInReportsRead = 0
    var traceWarningsRead = 0
    var archivesBuilt = 0
    var publish = Publisher.Outcome()
    var latency = PublicationLatency()
    /// Per folder (`DE`, `EUR`): keys the cap moved to a later hour, and keys it holds for a later run.
    var sizes: [String: KeyBundler.SizeEffect] = [:]
    /// The audit of the published tree against this run's plan (`AUDIT_AFTER_RUN`).
    var audit: AuditReport?
    /// The audit ran and could not read the tree.
    var auditFailed = false
    /// Epoch seconds.
    var finishedAt = 0.0
}

/// Runs the distribution once, with the key store to itself (`withPublicationRun`): two runs (a CronJob overlapping
/// itself, two replicas in serve mode) never interleave, the second returns `nil` at once. Database retention
/// commits with the run: when publishing fails, the rows stay and the next run tries again.
struct DistributionRun: Sendable {
    /// How long the daily self-report statistics (`self_report_submissions`: a type and a date) are kept: the
    /// reference's `srs-type-statistics-days` (cwa-server §3.9).
    static let selfReportStatisticsDays = 400

    let configuration: DistributionConfiguration
    let keys: any DiagnosisKeyRepository
    let store: any ObjectStore
    let clock: WallClock
    let metrics: DistributionMetrics
    let logger: Logger

    /// The run's report, or `nil` when another run holds the lock.
    func run() async throws -> RunReport? {
        let started = ContinuousClock.now
        do {
            let report = try await self.keys.withPublicationRun { run in
                try await self.work(run)
            }
            let seconds = (ContinuousClock.now - started).timeInterval
            guard let report else {
                self.logger.notice("Another distribution run holds the lock; this one ends without work")
                self.metrics.runFinished("skipped", seconds: seconds)
                return nil
            }
            self.metrics.runFinished("completed", seconds: seconds)
            self.metrics.completed(report)
            self.logger.info(
                "Distribution run completed",
                metadata: [
                    "seconds": "\(String(format: "%.2f", seconds))", "keys": "\(report.keysRead)",
                    "archives": "\(report.archivesBuilt)", "uploaded": "\(report.publish.uploaded)",
                    "unchanged": "\(report.publish.unchanged)", "deleted": "\(report.objectsDeleted)",
                ]
            )
            return report
        } catch {
            self.metrics.runFinished("failed", seconds: (ContinuousClock.now - started).timeInterval)
            throw error
        }
    }

    private func work(_ database: any KeyPublicationRun) async throws -> RunReport {
        let policy = self.configuration.policy
        let now = self.clock.now
        // The hour of `now` less the grace, so the hour that just ended is published once its submissions are in
        // (a demonstration that publishes the current, incomplete hour needs none).
        let grace = policy.includeIncompleteHours ? 0 : policy.hourCompleteAfter / .seconds(1)
        let currentHour = DistributionTime.hour(now.timeIntervalSince1970 - grace)
        let retentionStartHour = currentHour - Int64(policy.retentionDays) * 24
        let publisher = Publisher(store: self.store, policy: self.configuration.publishing, logger: self.logger)
        var report = RunReport()

        // 1. Retention first (§3.9): rows now, published objects after publishing (step 6).
        report.retention = try await database.deleteSubmitted(before: retentionStartHour)
        report.retention.selfReports = try await database.deleteSelfReports(
            before: currentHour / 24 - Int64(Self.selfReportStatisticsDays)
        )
        // The prefix without a slash: the root index `version` is itself an object.
        var existing = try await self.store.list(prefix: CDNPaths.root)
        if self.configuration.nhs != nil {
            existing.formUnion(try await self.store.list(prefix: "distribution/"))
        }
        // Expired objects are deleted after publishing, once no index names them any more: a run that dies before
        // leaves them (and the indexes naming them) for the next run.
        let expired = ObjectRetention(policy: policy, currentHour: currentHour).expired(existing)
        existing.subtract(expired)
        let abandoned = try await self.store.removeAbandoned()
        self.logger.info(
            "Retention applied",
            metadata: [
                "rows.keys": "\(report.retention.keys)", "rows.checkins": "\(report.retention.checkInReports)",
                "rows.warnings": "\(report.retention.traceWarnings)",
                "rows.self_reports": "\(report.retention.selfReports)",
                "objects.expired": "\(expired.count)", "objects.abandoned": "\(abandoned)",
            ]
        )

        // 2. Keys: read, bundle, plan the tree.
        let readStart = ContinuousClock.now
        let keys = try await database.keys(
            minimumTRL: policy.minimumTRL,
            fromHour: currentHour - Int64(policy.daysToPublish) * 24
        )
        report.keysRead = keys.count
        let bundleStart = ContinuousClock.now
        let bundler = KeyBundler(policy: policy)
        let (bundles, sizes) = bundler.bundleWithSizes(keys, currentHour: currentHour)
        report.sizes = sizes
        for (folder, effect) in sizes.sorted(by: { $0.key < $1.key }) where effect != KeyBundler.SizeEffect() {
            self.logger.warning(
                "Keys moved to later hours: their periods are full",
                metadata: [
                    "folder": "\(folder)", "keys.deferred": "\(effect.deferred)", "keys.held": "\(effect.heldBack)",
                    "max": "\(policy.maxKeysPerBundle)",
                ]
            )
        }
        self.logger.info(
            "Keys read and bundled",
            metadata: [
                "keys": "\(keys.count)", "read.seconds": "\(Self.seconds(since: readStart, until: bundleStart))",
                "bundle.seconds": "\(Self.seconds(since: bundleStart))",
            ]
        )
        let force = self.configuration.publishing.forceUpdateKeyFiles
        let isPublished: (String) -> Bool = { !force && existing.contains($0) }
        let signer = self.configuration.signer
        let keyPlan = KeyTreeAssembler(policy: policy, signer: signer, logger: self.logger)
            .plan(bundles, currentHour: currentHour, isPublished: isPublished)

        // 3. Trace-warning packages of the complete hours inside retention.
        let reports = try await database.checkInReports(after: retentionStartHour, before: currentHour)
        let warnings = try await database.traceWarnings(after: retentionStartHour, before: currentHour)
        report.checkInReportsRead = reports.count
        report.traceWarningsRead = warnings.count
        let twp = TraceWarningAssembler(region: policy.originCountry, signer: signer)
            .plan(reports: reports, warnings: warnings, isPublished: isPublished)

        // 4. App configurations and the root indexes.
        let appConfiguration = self.configuration.appConfiguration
        // The messages hold protobuf maps, whose order would otherwise follow the process's hash seed: each run would
        // produce other bytes, another cwa-hash, and upload unchanged configurations again.
        var deterministic = BinaryEncodingOptions()
        deterministic.useDeterministicOrdering = true
        let options = deterministic
        let configJobs = CDNPaths.appConfigurations.map { entry in
            ArchiveJob(key: entry.key, isDirectoryIndex: false) {
                switch entry.platform {
                case .ios: try appConfiguration.ios.serializedBytes(options: options)
                case .android: try appConfiguration.android.serializedBytes(options: options)
                }
            }
        }
        let roots: [CDNObject] = [
            .index(CDNPaths.root, json: IndexJSON.strings(["v1"])),
            .index(CDNPaths.rootV2, json: IndexJSON.strings(["v2"]), isDirectoryIndex: false),
        ]
        self.logger.info(
            "Tree planned",
            metadata: [
                "keys": "\(keys.count)", "archives": "\(keyPlan.jobs.count + twp.jobs.count + configJobs.count)",
                "published.before": "\(keyPlan.unchanged + twp.unchanged)",
            ]
        )

        // 5. Sign (in parallel) and publish, a few archives at a time, so that no more than those are in memory
        // (as many as there are cores to sign or uploads to run at once): files first, indexes last.
        // 6. Delete what retention expired.
        let signStart = ContinuousClock.now
        let jobs = keyPlan.jobs + twp.jobs + configJobs
        let batch = max(1, ProcessInfo.processInfo.activeProcessorCount, self.configuration.publishing.parallelism)
        var signing = Duration.zero
        for start in stride(from: 0, to: jobs.count, by: batch) {
            let built = ContinuousClock.now
            let archives = try await signer.run(Array(jobs[start..<min(jobs.count, start + batch)]))
            signing += ContinuousClock.now - built
            report.archivesBuilt += archives.count
            report.publish.add(try await publisher.publish(archives, existing: existing))
        }
        // The NHS documents (signed now; republished only when their bytes or the signing key changed).
        let documents = try self.configuration.nhs?.objects(at: now) ?? []
        let objects = twp.files + documents + keyPlan.indexes + roots
        report.publish.add(try await publisher.publish(objects, existing: existing))
        report.latency = PublicationLatency.measure(
            keys: keys,
            bundler: bundler,
            plan: keyPlan,
            end: policy.includeIncompleteHours ? currentHour + 1 : currentHour,
            publishedAt: self.clock.now.timeIntervalSince1970
        )
        let publishing = ContinuousClock.now - signStart - signing
        self.logger.info(
            "Archives signed and published",
            metadata: [
                "archives": "\(report.archivesBuilt)",
                "sign.seconds": "\(Self.seconds(signing))",
                "publish.seconds": "\(Self.seconds(publishing))",
            ]
        )
        report.publish.unchanged += keyPlan.unchanged + twp.unchanged
        let published = Set(jobs.map(\.key) + objects.map(\.key))
        report.objectsDeleted = try await publisher.delete(expired.filter { !published.contains($0) })
        report.finishedAt = self.clock.now.timeIntervalSince1970

        // 7. The tree read back: every key this plan publishes must be in a listed archive that verifies.
        // The run is complete by now: an audit that cannot read the tree is reported, and fails nothing (its
        // retention would be undone with the run).
        if self.configuration.auditAfterRun {
            let auditStart = ContinuousClock.now
            let audit: AuditReport
            do {
                audit = try await TreeAudit(
                    store: self.store,
                    policy: policy,
                    publicKeys: signer.keys.map(\.privateKey.publicKey)
                ).audit(bundles, hour: currentHour)
            } catch {
                report.auditFailed = true
                self.logger.error("Audit: the published tree could not be read", metadata: ErrorMetadata.of(error))
                return report
            }
            report.audit = audit
            let metadata: Logger.Metadata = [
                "keys.missing": "\(audit.missingCount)", "archives.unusable": "\(audit.badArchiveCount)",
                "seconds": "\(Self.seconds(since: auditStart))",
            ]
            if audit.missingCount > 0 || audit.badArchiveCount > 0 {
                self.logger.error("Audit: keys of this run's plan are in no listed archive", metadata: metadata)
                for line in audit.lines { self.logger.error("Audit", metadata: ["audit": "\(line)"]) }
            } else {
                self.logger.info("Audit: every planned key is in a listed archive", metadata: metadata)
            }
        }
        return report
    }
}

extension DistributionRun {
    /// Seconds between two instants, to two decimals, for the progress log.
    static func seconds(since start: ContinuousClock.Instant, until end: ContinuousClock.Instant = .now) -> String {
        self.seconds(end - start)
    }

    /// A duration in seconds, to two decimals, for the progress log.
    static func seconds(_ duration: Duration) -> String {
        String(format: "%.2f", duration.timeInterval)
    }
}

/// Which published objects retention removes (§3.9): day folders older than the retention window, hour folders
/// before yesterday (with the default two days of hour files), trace-warning hours older than the window.
struct ObjectRetention: Sendable {
    let policy: KeyDistributionPolicy
    let currentHour: Int64

    func expired(_ keys: Set<String>) -> [String] {
        let today = DistributionTime.day(ofHour: self.currentHour)
        let oldestDay = today - Int64(self.policy.retentionDays)
        let oldestHourFolderDay = today - Int64(self.policy.hourFileRetentionDays - 1)
        let oldestTraceWarningHour = self.currentHour - Int64(self.policy.retentionDays) * 24
        let keyFolder = CDNPaths.keyCountries + "/"
        var expired: [String] = []
        for key in keys {
            if key.hasPrefix(keyFolder) {
                // <country>/date/<YYYY-MM-DD>[/hour[/<H>]]
                let parts = key.dropFirst(keyFolder.count).split(separator: "/")
                guard parts.count >= 3, parts[1] == "date", let day = DistributionTime.day(isoDate: parts[2]) else {
                    continue
                }
                if day < oldestDay || (parts.count >= 4 && parts[3] == "hour" && day < oldestHourFolderDay) {
                    expired.append(key)
                }
            } else if key.hasPrefix("version/v1/twp/country/") || key.hasPrefix("version/v2/twp/country/") {
                // …/<country>/hour/<hours since the epoch>
                let parts = key.split(separator: "/")
                guard parts.count == 7, parts[5] == "hour", let hour = Int64(parts[6]) else { continue }
                if hour < oldestTraceWarningHour { expired.append(key) }
            }
        }
        return expired.sorted()
    }
}
