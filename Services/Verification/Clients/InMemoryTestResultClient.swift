// test-result-service as a table in memory, for route tests.

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

    func result(for id: String) throws(UpstreamUnavailable) -> ReportedTestResult {
        guard !self.unavailable else { throw UpstreamUnavailable("test-result-service is unavailable") }
        return self.results[id] ?? ReportedTestResult(testResult: 0, sc: nil, labId: nil)
    }
}
