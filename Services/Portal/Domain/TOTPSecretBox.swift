// The officers' TOTP secrets at rest: AES-256-GCM under a key of TOTP_KEY_FILE, bound to the officer's name.

import Crypto
import ENCrypto
import Foundation

/// A TOTP secret as the `officer` row holds it.
enum StoredTOTPSecret: Sendable, Equatable {
    /// AES-GCM's combined form (12-byte nonce, ciphertext, 16-byte tag) under the key `keyID` of `TOTP_KEY_FILE`.
    case sealed(keyID: String, box: [UInt8])
    /// In clear: a row the start-up sealing has not reached yet, such as one written by a binary that does not seal.
    case clear([UInt8])
}

/// Seals and opens TOTP secrets with the keys of `TOTP_KEY_FILE` (AES-256-GCM, exactly 32-byte keys). The first key
/// seals; every key opens what it sealed. The officer's name is authenticated with the secret, so a sealed secret
/// copied into another officer's row does not open there.
struct TOTPSecretBox: Sendable {
    /// Nonce, 20-byte secret, tag: what `officer.totp_sealed` holds.
    static let sealedLength = 12 + 20 + 16

    let keys: KeyRing

    /// `secret` sealed for `username` under the current key.
    func seal(_ secret: [UInt8], username: String) throws -> StoredTOTPSecret {
        let box = try AES.GCM.seal(
            secret,
            using: self.keys.current.key,
            nonce: AES.GCM.Nonce(),
            authenticating: Self.associatedData(username)
        )
        guard let combined = box.combined else { throw TOTPSecretError.malformed }
        return .sealed(keyID: self.keys.current.id, box: Array(combined))
    }

    /// The secret of `username`: opened with the key the row names, or as it is when the row holds it in clear.
    func open(_ stored: StoredTOTPSecret, username: String) throws(TOTPSecretError) -> [UInt8] {
        switch stored {
        case .clear(let secret):
            return secret
        case .sealed(let keyID, let box):
            guard let key = self.keys.key(id: keyID) else { throw .unknownKey(keyID) }
            do {
                let sealed = try AES.GCM.SealedBox(combined: box)
                return Array(try AES.GCM.open(sealed, using: key, authenticating: Self.associatedData(username)))
            } catch {
                throw .authenticationFailed(keyID: keyID)
            }
        }
    }

    /// Whether `stored` should be sealed again: it is in clear, or sealed under a key that is not the current one.
    func needsSealing(_ stored: StoredTOTPSecret) -> Bool {
        switch stored {
        case .clear: true
        case .sealed(let keyID, _): keyID != self.keys.current.id
        }
    }

    private static func associatedData(_ username: String) -> [UInt8] {
        Array("en-portal-totp:\(username)".utf8)
    }
}

/// Why a stored TOTP secret does not open. The descriptions name the key id, never key material or the secret.
enum TOTPSecretError: Error, Equatable, CustomStringConvertible {
    /// The row names a key that `TOTP_KEY_FILE` does not hold (removed too early, or another file).
    case unknownKey(String)
    /// The key of that id did not open it: another key under the same id, or a row changed or moved to another officer.
    case authenticationFailed(keyID: String)
    /// Not AES-GCM's combined form.
    case malformed

    var description: String {
        switch self {
        case .unknownKey(let id): "TOTP_KEY_FILE has no key '\(id)'"
        case .authenticationFailed(let id): "the key '\(id)' of TOTP_KEY_FILE does not open it"
        case .malformed: "it is not a sealed box"
        }
    }
}
