// Waiting for a state a test can observe, instead of sleeping for a guessed time.

package enum Poll {
    /// Checks `condition` every `interval` until it holds (true) or `attempts` checks have failed (false). The bound
    /// only keeps a broken service from hanging the test; the caller asserts on the result.
    package static func until(
        every interval: Duration = .milliseconds(20),
        attempts: Int = 500,
        _ condition: () async throws -> Bool
    ) async throws -> Bool {
        for _ in 0..<attempts {
            if try await condition() { return true }
            try await Task.sleep(for: interval)
        }
        return false
    }
}
