// What verification-service asks test-result-service.

import ENNHS
import ENServiceKit

/// A result as test-result-service reports it to verification (cwa-satellites §2.1): codes 0–9.
struct ReportedTestResult: Decodable, Equatable, Sendable {
    var testResult: Int
    var sc: Int64?
    var labId: String?
    /// The lab protected the result with the date of birth (our extension; absent means no).
    var dobProtected: Bool?
}

/// Looks up the result of a hashed GUID or DOB hash at test-result-service.
protocol TestResultClient: Sendable {
    /// The result for `id` (already validated: 64 hex characters, or a DOB hash). Throws when test-result-service
    /// cannot answer; an unknown id is a pending result, not an error.
    func result(for id: String) async throws(UpstreamUnavailable) -> ReportedTestResult

    /// Creates the pending result of an NHS order for a CTA token, stored under the first of `ctaHashes` (its hash
    /// under each pepper key, the current first); `false` when one of them exists (a collision).
    func nhsCreateOrder(ctaHashes: [String]) async throws(UpstreamUnavailable) -> Bool

    /// The NHS result stored under one of `ctaHashes`, or `nil` when there is none (unknown or expired).
    func nhsResult(ctaHashes: [String]) async throws(UpstreamUnavailable) -> NHSResultReport?
}
