// federation-service's part of the `keys` database besides the keys themselves: the upload mirror and the batch list.

/// The jobs of which one run at a time works, across every replica and CronJob.
enum FederationJob: String, Sendable, CaseIterable {
    case upload
    case download
}

/// The upload mirror (`federation_upload_key`: consented PCR keys, mirrored as they are stored) and the batches the
/// gateway announced (`federation_batch_info`). Downloaded keys are written through `DiagnosisKeyRepository`.
protocol FederationRepository: Sendable {
    /// Runs `body` while holding `job`'s lock; `nil` at once when another run holds it. The job's writes commit one
    /// by one, so what the gateway acknowledged stays recorded when a later step fails.
    func exclusively<Result: Sendable>(
        _ job: FederationJob,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result?

    /// The consented keys no batch has taken yet, in no particular order.
    func pendingUploadKeys() async throws -> [UploadKey]

    /// Records that the gateway took `keys` in batch `tag`; returns how many were marked (a key a batch took before
    /// keeps its tag and is not counted).
    @discardableResult
    func markUploaded(_ keys: [UploadKey], tag: String) async throws -> Int

    /// Records a batch the gateway announced; a batch known already keeps its state. Returns whether it is new.
    @discardableResult
    func announce(tag: String, day: String, status: BatchStatus) async throws -> Bool

    /// The batches in `status`, in the order they were announced.
    func batches(_ status: BatchStatus) async throws -> [BatchInfo]

    func setStatus(_ status: BatchStatus, tag: String) async throws

    /// Whether the gateway announced `tag` before (in any state).
    func isKnown(tag: String) async throws -> Bool

    /// Forgets the batches of days before `day` (`yyyy-MM-dd`; retention). Returns how many were removed.
    @discardableResult
    func forgetBatches(before day: String) async throws -> Int

    /// Forgets the batches of exactly `day` (a date-based download starts the day over). Returns how many.
    @discardableResult
    func forgetBatches(of day: String) async throws -> Int
}

extension FederationRepository {
    /// Records a batch as unprocessed; a batch known already keeps its state. Returns whether it is new.
    @discardableResult
    func announce(tag: String, day: String) async throws -> Bool {
        try await self.announce(tag: tag, day: day, status: .unprocessed)
    }
}
