// One publication at a time, in order of arrival.

/// Lets one publication through at a time, the others wait in order (an actor alone would interleave at each await).
actor PublicationGate {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` once every publication that entered before has left.
    nonisolated func exclusively<Result>(_ body: () async throws -> Result) async throws -> Result {
        await self.enter()
        do {
            let result = try await body()
            await self.leave()
            return result
        } catch {
            await self.leave()
            throw error
        }
    }

    private func enter() async {
        guard self.busy else {
            self.busy = true
            return
        }
        await withCheckedContinuation { self.waiting.append($0) }
    }

    private func leave() {
        if self.waiting.isEmpty { self.busy = false } else { self.waiting.removeFirst().resume() }
    }
}
