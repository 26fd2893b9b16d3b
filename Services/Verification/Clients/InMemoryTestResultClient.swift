// test-result-service as a table in memory, for route tests.

import ENNHS
import ENServiceKit

/// Answers from results set by the test; an id never set is pending (code 0), as test-result-service answers.
/// `unavailable` makes every lookup fail like an unreachable peer.
actor InMemoryTestResultClient: TestResultClient {
    private var results: [String: ReportedTestResult] = [:]
    private var unavailable = false

    init() {}

    func set(_ result: ReportedTestResult, for id: String) {
        self.results[id] = result
    }

    func setUnavailable(_ unavailable: Bool) {
        self.unavailable = unavailable
    }

    private var nhsResults: [String: NHSResultReport] = [:]

    /// Sets the NHS result stored under `ctaHash`.
    func setNHS(_ result: NHSResultReport) {
        self.nhsResults[result.ctaHash] = result
    }

    func nhsCreateOrder(ctaHashes: [String]) throws(UpstreamUnavailable) -> Bool {
        guard !self.unavailable else { throw UpstreamUnavailable("test-result-service is unavailable") }
        guard let first = ctaHashes.first, ctaHashes.allSatisfy({ self.nhsResults[$0] == nil }) else { return false }
        self.nhsResults[first] = NHSResultReport(ctaHash: first, status: "pending")
        return true
    }

    func nhsResult(ctaHashes: [String]) throws(UpstreamUnavailable) -> NHSResultReport? {
        guard !self.unavailable else { throw UpstreamUnavailable("test-result-service is unavailable") }
        return ctaHashes.lazy.compactMap { self.nhsResults[$0] }.first
    }

    func result(for id: String) throws(UpstreamUnavailable) -> ReportedTestResult {
        guard !self.unavailable else { throw UpstreamUnavailable("test-result-service is unavailable") }
        return self.results[id] ?? ReportedTestResult(testResult: 0, sc: nil, labId: nil)
    }
}
