// What a secret typed or sent as text may hold before it is checked.

/// A secret (a password, an API key's secret) must hold no control character. bcrypt reads its input as a C string
/// and stops at the first NUL, so `secret + "\0anything"` would equal `secret`; the other control characters are
/// refused with it, since no secret this system issues or accepts is meant to hold one.
package enum SecretText {
    /// Whether `secret` has no C0 control character (U+0000…U+001F), no DEL and no C1 control (U+0080…U+009F).
    package static func isClean(_ secret: String) -> Bool {
        secret.unicodeScalars.allSatisfy { scalar in
            !(scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value))
        }
    }
}
