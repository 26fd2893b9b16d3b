// A validated result, ready to be stored.

import ENModels
import Foundation

/// One result of a lab batch after validation.
struct ResultUpload: Sendable, Equatable {
    /// The storage key (see `TestID.storageKey(for:)`).
    let key: String
    let result: LabTestResult
    /// Sample collection time (`sc`), or the time of upload when the lab sent none.
    let sampleCollectedAt: Date
    let labID: String?
}

/// A stored result as the lookups read it.
struct StoredResult: Sendable, Equatable {
    let result: LabTestResult
    let sampleCollectedAt: Date
    let labID: String?
}
