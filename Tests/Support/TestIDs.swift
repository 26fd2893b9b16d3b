// Test ids as the app computes them.

import ENCrypto
import Foundation

package enum TestIDs {
    /// A hashed GUID: lowercase hex SHA-256 of a (random by default) GUID.
    package static func hashedGUID(_ seed: String = UUID().uuidString) -> String {
        SecretHash.sha256Hex("guid-\(seed)")
    }

    /// A DOB hash as the app computes it: SHA-256 of GUID and birth date, first character replaced by `x`.
    package static func dobHash(_ seed: String = UUID().uuidString) -> String {
        "x" + SecretHash.sha256Hex("dob-\(seed)").dropFirst()
    }
}
