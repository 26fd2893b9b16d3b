// What the app registers a test with: the hashed GUID and the date-of-birth hash (cwa-satellites §1.2–1.3).

import ENCrypto

/// The SHA-256 hex of a test's GUID, as the app sends it (`^[0-9A-Fa-f]{64}$`), kept in lowercase so that one
/// GUID has one form for the one-token rule and for test-result-service.
struct HashedGUID: Hashable, Sendable {
    let value: String

    init?(_ text: String) {
        guard Hex.isSHA256(text) else { return nil }
        self.value = text.lowercased()
    }
}

/// The date-of-birth hash (`^[XxA-Fa-f0-9][A-Fa-f0-9]{63}$`, §1.2–1.3): SHA-256 hex of GUID and birth date with
/// its first character replaced by `x`; kept in lowercase.
struct DOBHash: Hashable, Sendable {
    let value: String

    init?(_ text: String) {
        guard Hex.isSHA256(text, xPrefix: true) else { return nil }
        self.value = text.lowercased()
    }
}
