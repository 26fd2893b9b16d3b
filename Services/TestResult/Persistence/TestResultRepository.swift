// Storage of test results, independent of the database behind it.

import ENModels
import Foundation

/// Where results live. Implementations must make every method atomic with respect to concurrent calls.
protocol TestResultRepository: Sendable {
    /// Inserts new results and overwrites existing ones, except rows that are redeemed (never changed) and final
    /// results a pending upload would overwrite (left as they are). A result belongs to the lab that uploaded it
    /// first: when an id of the batch belongs to another lab, nothing is stored and `LabUploadError.ownedByAnotherLab`
    /// is thrown. Date-of-birth protection, once set, stays.
    func store(_ uploads: [ResultUpload], now: Date) async throws -> StoreOutcome

    /// The result stored under `key`, creating a pending placeholder of `kind` when there is none (cwa-satellites
    /// §2.2: polling an unknown id yields "pending" and creates the row).
    func findOrCreatePending(key: String, kind: TestKind, now: Date) async throws -> StoredResult

    /// Masks rows created before `maskBefore` as redeemed and deletes rows created before `deleteBefore`.
    /// Returns `nil` when another replica is running retention right now.
    func applyRetention(maskBefore: Date, deleteBefore: Date, now: Date) async throws -> TestResultRetentionOutcome?
}

/// What a batch store did.
struct StoreOutcome: Sendable, Equatable {
    var inserted = 0
    var updated = 0
    /// Rows left alone because they are redeemed.
    var unchanged = 0
}

/// What a retention run did.
struct TestResultRetentionOutcome: Sendable, Equatable {
    var masked = 0
    var deleted = 0
    /// Expired results of the NHS path.
    var nhsDeleted = 0
}
