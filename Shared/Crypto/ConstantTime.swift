// Comparison of secrets whose duration does not depend on where they differ.

/// Constant-time equality for secrets (tokens, hashes, thumbprints).
package enum ConstantTime {
    /// Whether the two byte sequences are equal. Runs over the whole of both inputs; only their lengths leak.
    package static func equals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
        var difference: UInt8 = lhs.count == rhs.count ? 0 : 1
        var left = lhs.makeIterator()
        var right = rhs.makeIterator()
        // Walk the longer input fully so the time depends only on the lengths.
        for _ in 0..<max(lhs.count, rhs.count) {
            let a = left.next() ?? 0
            let b = right.next() ?? 0
            difference |= a ^ b
        }
        return difference == 0
    }

    /// Whether the UTF-8 bytes of two strings are equal, compared in constant time.
    package static func equals(_ lhs: String, _ rhs: String) -> Bool {
        self.equals(Array(lhs.utf8), Array(rhs.utf8))
    }

    /// Whether `candidate` equals any element of `set`; every element is compared, so timing reveals no position.
    package static func contains(_ set: [String], _ candidate: String) -> Bool {
        var found = false
        for element in set where self.equals(element, candidate) {
            found = true
        }
        return found
    }
}
