// A wall clock that tests set and advance.

package import ENServiceKit
package import Foundation

/// Test time: starts at a fixed instant and only moves when told to.
package final class ManualClock: Sendable {
    private let current: Mutexed<Date>

    package init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        self.current = Mutexed(start)
    }

    package var now: Date { self.current.value }

    package func advance(by interval: TimeInterval) {
        self.current.withLock { $0 = $0.addingTimeInterval(interval) }
    }

    /// The clock as the services take it.
    package var wallClock: WallClock { WallClock { self.now } }
}
