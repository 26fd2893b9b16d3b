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
    /// The lab's id: its certificate's lab id, or, without lab certificates, the body's `labId`.
    let labID: String?
    /// Whether `labID` comes from a verified certificate: only then does the result belong to that lab, so that no
    /// other lab can overwrite it.
    var labAuthenticated = false
    /// Registration, polling and TANs need the matching date-of-birth hash (our extension, `dobProtected`); once
    /// set it stays set.
    var dobProtected = false
}

/// A stored result as the lookups read it.
struct StoredResult: Sendable, Equatable {
    let result: LabTestResult
    let sampleCollectedAt: Date
    let labID: String?
    var dobProtected = false
}
