// The stored form of a teleTAN: HMAC-SHA-256 under a server-side key (the pepper), never a plain hash.

import Crypto
import ENCrypto

/// A teleTAN's hash as a row holds it, with the id of the pepper key it was computed under. `keyID` `nil` is the
/// unpeppered SHA-256 of rows that no key hashed (see `TeleTANPepper.candidates`).
struct TeleTANDigest: Sendable, Hashable {
    var keyID: String?
    /// Lowercase hex, 64 digits.
    var hash: String
}

/// The keys of `TELETAN_PEPPER_FILE`. A teleTAN has about 44.6 bits (9 symbols of 31), so its plain SHA-256 is found
/// by trying every teleTAN; under a key that lives only in the service's file, a database dump alone gives nothing to
/// try them against.
struct TeleTANPepper: Sendable {
    let keys: KeyRing

    /// How a new teleTAN is stored: under the current key.
    func digest(_ teleTAN: TeleTAN) -> TeleTANDigest {
        Self.digest(teleTAN, key: self.keys.current)
    }

    /// Every form a stored teleTAN may have: one per configured key (so teleTANs hashed before a rotation stay
    /// redeemable while their key is configured), and the unpeppered SHA-256 (`keyID` `nil`) that rows without a key
    /// id hold (migration 0002), accepted until they expire (at most `TELETAN_EVENT_VALIDITY`).
    func candidates(_ teleTAN: TeleTAN) -> [TeleTANDigest] {
        self.keys.entries.map { Self.digest(teleTAN, key: $0) }
            + [TeleTANDigest(keyID: nil, hash: SecretHash.sha256Hex(teleTAN.value))]
    }

    private static func digest(_ teleTAN: TeleTAN, key: KeyRing.Entry) -> TeleTANDigest {
        let mac = HMAC<SHA256>.authenticationCode(for: Array(teleTAN.value.utf8), using: key.key)
        return TeleTANDigest(keyID: key.id, hash: Hex.encode(mac))
    }
}
