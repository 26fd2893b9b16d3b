// One download run (cwa-server §5.4): the batches the gateway announced, downloaded, checked and stored.

import ENFederation
import ENKeyStore
import ENModels
import ENServiceKit
import Foundation
import Logging

/// How downloads find their batches.
struct DownloadPolicy: Sendable, Equatable {
    /// Fetch the first batch of a day and walk `nextBatchTag` (besides the batches announced by callback).
    var dateBased = false
    /// The day fetched in date-based mode: today minus this many days.
    var offsetDays = 0
    /// Batch records older than this many days are forgotten.
    var retentionDays = 14
    /// Check every upload batch's signature through the gateway's audit entries before storing its keys.
    var verifySignatures = true
    /// Most batches one run processes (a bound on a chain the gateway could make endless).
    var maximumBatches = 1000

    init() {}

    init(settings: SettingsReader) {
        let defaults = DownloadPolicy()
        self.dateBased = settings.bool(
            "FEDERATION_DATE_BASED_DOWNLOAD",
            default: defaults.dateBased,
            help:
                "Each download run fetches the day's first batch and follows nextBatchTag (else only callbacks announce batches)."
        )
        self.offsetDays = settings.int(
            "FEDERATION_DOWNLOAD_OFFSET_DAYS",
            default: defaults.offsetDays,
            range: 0...14,
            help: "Date-based downloads fetch the day this many days before today."
        )
        self.verifySignatures = settings.bool(
            "FEDERATION_VERIFY_SIGNATURES",
            default: defaults.verifySignatures,
            help: "Check each upload batch's signature (from the gateway's audit) against FEDERATION_TRUST_ANCHORS."
        )
        self.maximumBatches = settings.int(
            "FEDERATION_DOWNLOAD_MAX_BATCHES",
            default: defaults.maximumBatches,
            range: 1...100_000,
            help: "Most batches one download run processes."
        )
    }
}

/// What a download run did.
struct DownloadOutcome: Sendable, Equatable {
    var batchesProcessed = 0
    var batchesFailed = 0
    var keysStored = 0
    /// Keys the rules or the signature check refused, by reason.
    var keysRefused: [String: Int] = [:]
}

/// Downloads, checks and stores; one batch's failure is recorded on the batch and never stops the run.
struct DownloadRun: Sendable {
    let store: any FederationRepository
    /// Where accepted keys go: the key store's one insertion, by the rule submissions follow.
    let keys: any DiagnosisKeyRepository
    let gateway: any FederationGateway
    let acceptance: KeyAcceptance
    let verification: BatchVerification
    let policy: DownloadPolicy
    let clock: WallClock
    let metrics: FederationMetrics
    let logger: Logger

    /// Runs once; `nil` when another run holds the lock. Throws only when the database or, in date-based mode, the
    /// first call to the gateway fails, or the gateway refuses this backend (403).
    func run() async throws -> DownloadOutcome? {
        let outcome = try await self.store.exclusively(.download) {
            try await self.download()
        }
        guard let outcome else {
            self.logger.info("Download skipped: another run holds the lock")
            return nil
        }
        self.metrics.recordDownloadRun(outcome, at: self.clock.now)
        self.logger.info(
            "Download run finished",
            metadata: [
                "batches.processed": "\(outcome.batchesProcessed)", "batches.failed": "\(outcome.batchesFailed)",
                "keys.stored": "\(outcome.keysStored)",
                "keys.refused": "\(outcome.keysRefused.values.reduce(0, +))",
            ]
        )
        return outcome
    }

    private func download() async throws -> DownloadOutcome {
        let now = self.clock.now
        let today = Calendar.utc.startOfDay(for: now)
        try await self.store.forgetBatches(
            before: FederationProtocol.dayString(today.addingTimeInterval(-Double(self.policy.retentionDays) * 86_400))
        )
        var outcome = DownloadOutcome()
        var budget = self.policy.maximumBatches
        if self.policy.dateBased {
            let day = FederationProtocol.dayString(today.addingTimeInterval(-Double(self.policy.offsetDays) * 86_400))
            try await self.store.forgetBatches(of: day)
            switch try await self.gateway.download(day: day, tag: nil) {
            case .batch(let first): try await self.store.announce(tag: first.tag, day: day)
            case .notFound, .gone: self.logger.info("The gateway has no batch for the day", metadata: ["day": "\(day)"])
            }
        }
        for batch in try await self.store.batches(.error) where budget > 0 {
            budget -= 1
            let next = try await self.process(batch, retry: true, into: &outcome)
            if let next, self.policy.dateBased, try await !self.store.isKnown(tag: next) {
                try await self.store.announce(tag: next, day: batch.day)
            }
        }
        while budget > 0, let batch = try await self.store.batches(.unprocessed).first {
            budget -= 1
            let next = try await self.process(batch, retry: false, into: &outcome)
            if let next, self.policy.dateBased, try await !self.store.isKnown(tag: next) {
                try await self.store.announce(tag: next, day: batch.day)
            }
        }
        return outcome
    }

    /// Processes one batch and records its new state; returns the gateway's `nextBatchTag`.
    private func process(_ info: BatchInfo, retry: Bool, into outcome: inout DownloadOutcome) async throws -> String? {
        do {
            let (status, next) = try await self.fetchAndStore(info, into: &outcome)
            try await self.store.setStatus(status, tag: info.tag)
            outcome.batchesProcessed += 1
            self.metrics.recordDownloadBatch(status.rawValue.lowercased())
            return next
        } catch let error as GatewayUnavailable where error.forbidden {
            throw error
        } catch let error where !(error is CancellationError) && !(error is DatabaseFailure) {
            let status: BatchStatus = retry ? .errorWontRetry : .error
            try await self.store.setStatus(status, tag: info.tag)
            outcome.batchesFailed += 1
            self.metrics.recordDownloadBatch(status.rawValue.lowercased())
            self.logger.error(
                "A batch could not be processed",
                metadata: ["batch.status": "\(status.rawValue)", "error": "\(error)"]
            )
            return nil
        }
    }

    private func fetchAndStore(
        _ info: BatchInfo,
        into outcome: inout DownloadOutcome
    ) async throws -> (BatchStatus, String?) {
        let now = self.clock.now
        let downloaded: DownloadedBatch
        switch try await self.gateway.download(day: info.day, tag: info.tag) {
        case .batch(let batch): downloaded = batch
        case .notFound: throw GatewayProtocolError("the gateway does not know the batch")
        case .gone: throw GatewayProtocolError("the gateway no longer keeps the batch's day")
        }
        let keys = downloaded.batch.keys
        var verdicts = Array(repeating: true, count: keys.count)
        if self.policy.verifySignatures, !keys.isEmpty {
            let entries = try await self.gateway.audit(day: info.day, tag: info.tag)
            switch await self.verification.verify(keys, entries: entries, at: now) {
            case .success(let result): verdicts = result
            case .failure: throw GatewayProtocolError("the audit entries do not cover the batch's keys")
            }
        }
        var accepted: [FederatedKey] = []
        var refused = 0
        for (key, verified) in zip(keys, verdicts) {
            let result: Result<FederatedKey, KeyAcceptance.Refusal> =
                verified ? self.acceptance.accept(key, now: now) : .failure(.signature)
            switch result {
            case .success(let stored): accepted.append(stored)
            case .failure(let refusal):
                refused += 1
                outcome.keysRefused[refusal.rawValue, default: 0] += 1
                self.metrics.recordKeyRefused(refusal.rawValue)
            }
        }
        let stored: Int
        do {
            stored = try await self.keys.storeFederated(
                accepted,
                submissionHour: Int64(now.timeIntervalSince1970) / 3600
            )
        } catch {
            throw DatabaseFailure(underlying: error)
        }
        outcome.keysStored += stored
        self.metrics.recordKeysDownloaded(stored)
        return (refused == 0 ? .processed : .processedWithError, downloaded.nextTag)
    }
}

/// A database failure while processing a batch: it stops the run instead of marking the batch.
struct DatabaseFailure: Error, CustomStringConvertible {
    var underlying: any Error
    var description: String { "database: \(String(reflecting: type(of: self.underlying)))" }
}
