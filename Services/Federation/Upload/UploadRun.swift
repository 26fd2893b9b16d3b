// One upload run (cwa-server §5.2): the waiting keys, in signed batches, to the gateway; what it took is marked.

import ENFederation
import ENModels
import ENServiceKit
import Foundation
import Logging

/// What an upload run did.
struct UploadOutcome: Sendable, Equatable {
    /// Batches the gateway took whole (201) or in part (207).
    var batchesAccepted = 0
    /// Batches it refused (409 for the tag, another 4xx); their keys wait for the next run.
    var batchesRefused = 0
    /// Keys marked as taken.
    var keysAccepted = 0
    /// Keys sent but left for the next run (refused batches, and a 207's 201/500 keys when it had conflicts).
    var keysDeferred = 0
    /// Keys waiting that are not sent yet (expiry policy, too few for a batch).
    var keysWaiting = 0
}

/// Sends the waiting keys. A key is marked with its batch tag only when the gateway took it, in its own statement
/// right after the answer, so a later failure loses nothing acknowledged and no acknowledged key is sent again.
struct UploadRun: Sendable {
    let store: any FederationRepository
    let gateway: any FederationGateway
    let signer: BatchSigner
    let policy: UploadPolicy
    let clock: WallClock
    let metrics: FederationMetrics
    let logger: Logger

    /// Runs once; `nil` when another run holds the upload lock. Throws when the gateway is unreachable (after the
    /// retries) or the database fails: what was marked before stays marked.
    func run() async throws -> UploadOutcome? {
        let outcome = try await self.store.exclusively(.upload) {
            try await self.upload()
        }
        guard let outcome else {
            self.logger.info("Upload skipped: another run holds the lock")
            return nil
        }
        self.metrics.recordUploadRun(outcome, at: self.clock.now)
        self.logger.info(
            "Upload run finished",
            metadata: [
                "batches.accepted": "\(outcome.batchesAccepted)", "batches.refused": "\(outcome.batchesRefused)",
                "keys.accepted": "\(outcome.keysAccepted)", "keys.deferred": "\(outcome.keysDeferred)",
                "keys.waiting": "\(outcome.keysWaiting)",
            ]
        )
        return outcome
    }

    private func upload() async throws -> UploadOutcome {
        let now = self.clock.now
        let pending = try await self.store.pendingUploadKeys()
        let uploadable = pending.filter { self.policy.isUploadable($0, now: now) }
        let batches = self.policy.batches(of: uploadable)
        var outcome = UploadOutcome()
        outcome.keysWaiting = pending.count - batches.reduce(0) { $0 + $1.count }
        var random = SystemRandomNumberGenerator()
        let tags = UploadBatchTags(time: now, random: &random)
        // Up to `parallelism` batches are in flight at once; each is marked as soon as its own answer is in. A failed
        // batch (the gateway unreachable, the database) fails the run once the batches already in flight are done.
        var failure: (any Error)?
        await withThrowingTaskGroup(of: BatchResult.self) { group in
            var next = 0
            func startNext() {
                guard next < batches.count else { return }
                let (tag, keys) = (tags.tag(next + 1), batches[next])
                next += 1
                group.addTask { try await self.send(keys, tag: tag, now: now) }
            }
            for _ in 0..<self.policy.parallelism { startNext() }
            while let result = await group.nextResult() {
                switch result {
                case .success(let batch):
                    if batch.taken == 0 { outcome.batchesRefused += 1 } else { outcome.batchesAccepted += 1 }
                    outcome.keysAccepted += batch.marked
                    outcome.keysDeferred += batch.sent - batch.taken
                    if failure == nil { startNext() }
                case .failure(let error):
                    failure = failure ?? error
                }
            }
        }
        if let failure { throw failure }
        return outcome
    }

    private struct BatchResult: Sendable {
        var sent: Int
        var taken: Int
        var marked: Int
    }

    /// Signs and sends one batch, then marks what the gateway took.
    private func send(_ keys: [UploadKey], tag: String, now: Date) async throws -> BatchResult {
        let federationKeys = keys.map(\.federationKey)
        var batch = DiagnosisKeyBatch()
        batch.keys = federationKeys
        let signature = try self.signer.sign(BatchSignatureBytes.batch(of: federationKeys), at: now)
        let answer = try await self.gateway.upload(batch, tag: tag, signature: signature)
        let taken: [UploadKey]
        switch answer {
        case .created:
            taken = keys
            self.metrics.recordUploadBatch("created")
        case .multiStatus(let response):
            taken = Self.taken(keys, response)
            self.metrics.recordUploadBatch("partial")
        case .duplicateTag:
            taken = []
            self.metrics.recordUploadBatch("duplicate_tag")
            self.logger.warning("The gateway refused a batch tag as used; its keys go in the next run")
        case .refused(let status, let message):
            taken = []
            self.metrics.recordUploadBatch("refused")
            self.logger.error(
                "The gateway refused a batch; its keys go in the next run",
                metadata: ["gateway.status": "\(status)", "gateway.message": "\(message)"]
            )
        }
        let marked = try await self.store.markUploaded(taken, tag: tag)
        return BatchResult(sent: keys.count, taken: taken.count, marked: marked)
    }

    /// The keys of a 207 that count as taken. With a 409 or 500 in it, the gateway rolled the batch back
    /// (cwa-satellites §5.2, efgs-federation-gateway#233): its 201 and 500 keys are sent again; a 409 key is there
    /// already. Without either, every key is taken.
    static func taken(_ keys: [UploadKey], _ response: BatchUploadResponse) -> [UploadKey] {
        guard !response.conflict.isEmpty || !response.failed.isEmpty else { return keys }
        let again = Set(response.created).union(response.failed)
        return keys.indices.filter { !again.contains($0) }.map { keys[$0] }
    }
}
