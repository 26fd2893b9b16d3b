// A value behind a lock, for test support state shared across tasks.

import Synchronization

/// A minimal lock-protected box.
package final class Mutexed<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    package init(_ value: Value) {
        self.mutex = Mutex(value)
    }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try self.mutex.withLock { try body(&$0) }
    }

    package var value: Value {
        get { self.mutex.withLock { $0 } }
        set { self.mutex.withLock { $0 = newValue } }
    }
}
