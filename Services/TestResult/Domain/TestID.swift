// The id a lab, portal or verification-service names a test by, and the form it is stored under.

import ENCrypto
import ENModels

/// A hashed test id: 64 hex characters, the first of which may be `x` for a date-of-birth hash
/// (pattern `^[XxA-Fa-f0-9][A-Fa-f0-9]{63}$`, cwa-satellites §2.1).
struct TestID: Sendable {
    /// Exactly as received.
    let raw: String

    init?(_ text: String) {
        guard Hex.isSHA256(text, xPrefix: true) else { return nil }
        self.raw = text
    }

    /// The key the row is stored and looked up under, the same for writes and reads of a kind.
    ///
    /// PCR results arrive from labs under the hash the app registers, so they are stored as that hash, lowercased
    /// (a lab writing upper case still matches the app's lower case). Rapid and PoC-NAT portals send the preimage of
    /// what the app registers; the reference stores their batch uploads under SHA-256 of the id but creates pending
    /// rows for the portals' single lookups under the raw id (cwa-satellites §2.2, "quirk"). We use SHA-256 of the id
    /// exactly as sent for every rapid and PoC-NAT write and read, so a portal's lookup finds the row its upload made.
    func storageKey(for kind: TestKind) -> String {
        switch kind {
        case .pcr: self.raw.lowercased()
        case .rapidAntigen, .pointOfCareNAT: SecretHash.sha256Hex(self.raw)
        }
    }
}
