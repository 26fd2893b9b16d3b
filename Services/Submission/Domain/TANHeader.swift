// The TAN of a submission, as its header carries it (cwa-server §8.1).

import Foundation

/// A TAN as the `cwa-authorization` header carries it.
enum TANHeader {
    /// The TAN in lower case, from a bare UUID or the documented `TAN <uuid>` form (cwa-server §8.1); nil when it
    /// is not a UUID.
    static func parse(_ value: String) -> String? {
        var text = value.trimmingCharacters(in: .whitespaces)
        if text.count > 4, text.prefix(4).caseInsensitiveCompare("TAN ") == .orderedSame {
            text = text.dropFirst(4).trimmingCharacters(in: .whitespaces)
        }
        guard text.utf8.count == 36, UUID(uuidString: text) != nil else { return nil }
        return text.lowercased()
    }
}
