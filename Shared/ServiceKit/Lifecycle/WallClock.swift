// Calendar time, injected so expiry, embargo and retention can be tested.

package import Foundation

/// The current date, as a value so tests can substitute a controllable clock.
package struct WallClock: Sendable {
    private let read: @Sendable () -> Date

    package init(_ read: @escaping @Sendable () -> Date) {
        self.read = read
    }

    package var now: Date { self.read() }

    /// The system clock.
    package static let system = WallClock { Date() }
}

extension Duration {
    /// The duration in seconds, for arithmetic with `Date`.
    package var timeInterval: TimeInterval {
        TimeInterval(self.components.seconds) + TimeInterval(self.components.attoseconds) / 1e18
    }
}
