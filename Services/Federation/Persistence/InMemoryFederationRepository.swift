// federation-service's tables in memory, for route tests and runs without PostgreSQL.

import ENKeyStore

/// The upload mirror and the batch list in memory, with the rules of the PostgreSQL repository: the mirror is the key
/// store's consented PCR keys (as its trigger copies them), each taken by one batch; a batch is announced once and
/// keeps its state; each job runs once at a time.
struct InMemoryFederationRepository: FederationRepository {
    /// The key store whose keys the mirror holds.
    let keys: InMemoryDiagnosisKeyRepository
    private let state = InMemoryFederationState()

    init(keys: InMemoryDiagnosisKeyRepository) {
        self.keys = keys
    }

    func exclusively<Result: Sendable>(
        _ job: FederationJob,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result? {
        guard await self.state.begin(job) else { return nil }
        do {
            let result = try await body()
            await self.state.end(job)
            return result
        } catch {
            await self.state.end(job)
            throw error
        }
    }

    func pendingUploadKeys() async throws -> [UploadKey] {
        let taken = await self.state.taken
        return await self.keys.storedKeys.filter(Self.isMirrored).compactMap { key in
            taken[InMemoryFederationState.Identity(key)] == nil ? Self.uploadKey(key) : nil
        }
    }

    @discardableResult
    func markUploaded(_ keys: [UploadKey], tag: String) async throws -> Int {
        let mirrored = Set(
            await self.keys.storedKeys.filter(Self.isMirrored).map(InMemoryFederationState.Identity.init)
        )
        let identities = keys.map { InMemoryFederationState.Identity(keyData: $0.keyData, type: $0.submissionType) }
        return await self.state.mark(identities.filter(mirrored.contains), tag: tag)
    }

    @discardableResult
    func announce(tag: String, day: String, status: BatchStatus) async throws -> Bool {
        await self.state.announce(BatchInfo(tag: tag, day: day, status: status))
    }

    func batches(_ status: BatchStatus) async throws -> [BatchInfo] {
        await self.state.batches.filter { $0.status == status }
    }

    func setStatus(_ status: BatchStatus, tag: String) async throws {
        await self.state.setStatus(status, tag: tag)
    }

    func isKnown(tag: String) async throws -> Bool {
        await self.state.batches.contains { $0.tag == tag }
    }

    @discardableResult
    func forgetBatches(before day: String) async throws -> Int {
        // `yyyy-MM-dd` orders as the days do.
        await self.state.forget { $0.day < day }
    }

    @discardableResult
    func forgetBatches(of day: String) async throws -> Int {
        await self.state.forget { $0.day == day }
    }

    /// What the trigger of `diagnosis_key` copies: consented PCR keys.
    private static func isMirrored(_ key: StoredKey) -> Bool {
        key.consentToFederation && key.submissionType == FederatedKey.submissionType
    }

    private static func uploadKey(_ key: StoredKey) -> UploadKey {
        UploadKey(
            keyData: key.row.keyData,
            submissionType: key.submissionType,
            rollingStartIntervalNumber: key.row.rollingStartIntervalNumber,
            rollingPeriod: key.row.rollingPeriod,
            submissionHour: key.submissionHour,
            transmissionRiskLevel: key.row.transmissionRiskLevel,
            originCountry: key.originCountry,
            visitedCountries: key.visitedCountries,
            reportType: key.row.reportType,
            daysSinceOnsetOfSymptoms: key.row.daysSinceOnsetOfSymptoms
        )
    }
}

/// The batches, the tags of taken keys and the running jobs, behind an actor so that every change is atomic.
actor InMemoryFederationState {
    /// A key of the mirror: its key data and submission type (the table's primary key).
    struct Identity: Hashable, Sendable {
        var keyData: [UInt8]
        var type: String

        init(keyData: [UInt8], type: String) {
            self.keyData = keyData
            self.type = type
        }

        init(_ key: StoredKey) {
            self.init(keyData: key.row.keyData, type: key.submissionType)
        }
    }

    /// The batch tag that took each uploaded key.
    private(set) var taken: [Identity: String] = [:]
    /// In the order announced.
    private(set) var batches: [BatchInfo] = []
    private var running: Set<FederationJob> = []

    func begin(_ job: FederationJob) -> Bool {
        self.running.insert(job).inserted
    }

    func end(_ job: FederationJob) {
        self.running.remove(job)
    }

    func mark(_ keys: [Identity], tag: String) -> Int {
        var marked = 0
        for key in keys where self.taken[key] == nil {
            self.taken[key] = tag
            marked += 1
        }
        return marked
    }

    func announce(_ batch: BatchInfo) -> Bool {
        guard !self.batches.contains(where: { $0.tag == batch.tag }) else { return false }
        self.batches.append(batch)
        return true
    }

    func setStatus(_ status: BatchStatus, tag: String) {
        for index in self.batches.indices where self.batches[index].tag == tag {
            self.batches[index].status = status
        }
    }

    func forget(where condition: @Sendable (BatchInfo) -> Bool) -> Int {
        let before = self.batches.count
        self.batches.removeAll(where: condition)
        return before - self.batches.count
    }
}
