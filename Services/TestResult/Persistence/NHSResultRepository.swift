// Results of the NHS test path (nhs §3.2), kept under the hashes of their CTA tokens: the orders verification-service
// places, the labs' results for them, and results stored under new tokens by the token API.

import ENNHS
import Foundation

/// A result of the NHS path as stored.
struct NHSStoredResult: Sendable, Equatable {
    enum Status: String, Sendable { case pending, available }
    /// The stored hash of the token.
    var ctaHash: String
    var status: Status
    var testEndDate: NHSTestEndDate?
    var testResult: NHSTestResult?
    var testKit: NHSTestKit?
}

/// Each change is one conditional step, so two uploads for one token race to one `stored` and one
/// `alreadyAvailable`, and two orders of one hash to one `true`. A row is found only before its `expiresAt`.
protocol NHSResultRepository: Sendable {
    /// A pending result for a new order, stored under `ctaHash` (the token's hash under the current pepper key);
    /// `false` when that hash, or one of `otherHashes` (the token's hashes under the pepper's other keys), exists
    /// already: a collision, draw another token. Checking the other keys' hashes keeps a token unique across a pepper
    /// rotation, which lookups (by every key's hash) rely on.
    func createOrder(ctaHash: String, otherHashes: [String], now: Date, expiresAt: Date) async throws -> Bool

    /// An available result under a new token of the token API; `false` on a collision (as `createOrder`).
    func createAvailable(
        ctaHash: String,
        otherHashes: [String],
        result: NHSLabResult,
        now: Date,
        expiresAt: Date
    ) async throws -> Bool

    /// Available results for new tokens, all or none: `NHSCollision` when a hash exists already (or twice in
    /// `entries`), or one of `otherHashes` does.
    func createAvailable(
        _ entries: [(ctaHash: String, result: NHSLabResult)],
        otherHashes: [String],
        now: Date,
        expiresAt: Date
    ) async throws

    /// Sets the result of the pending, unexpired order whose token hash is one of `candidates`.
    func upload(candidates: [String], result: NHSLabResult, now: Date) async throws -> NHSUploadOutcome

    /// The unexpired result whose token hash is one of `candidates`.
    func find(candidates: [String], now: Date) async throws -> NHSStoredResult?

    /// Deletes the rows whose `expiresAt` has come; returns how many.
    func deleteExpired(now: Date) async throws -> Int
}
