// The one-time passwords the apps create here and other services redeem (cwa-satellites §4.1).

import ENAttestation
import ENCrypto
import Foundation

/// What an OTP is for; each has its own redemption route and lifetime.
enum OTPKind: String, Sendable, CaseIterable {
    /// EDUS: a survey invitation (`otp`).
    case survey
    /// ELS: error-log sharing (`els`).
    case errorLog = "error_log"
    /// SRS: a self-reported positive test (`srs`).
    case selfReport = "self_report"

    var scenario: AttestationScenario {
        switch self {
        case .survey: .survey
        case .errorLog: .errorLog
        case .selfReport: .selfReport
        }
    }
}

/// An OTP as the apps send it: a UUID, kept lower-case (§4.1); stored only as its SHA-256.
struct OTP: Sendable, Equatable {
    let value: String

    /// The OTP of `text` when it is a UUID, else nil; `strict`: an RFC 4122 version 3 or 4 UUID with the variant
    /// bits of §4.1, the only OTPs redemption accepts.
    init?(_ text: String, strict: Bool = false) {
        guard text.utf8.count == 36, UUID(uuidString: text) != nil else { return nil }
        let lower = text.lowercased()
        if strict {
            let bytes = Array(lower.utf8)
            guard bytes[14] == UInt8(ascii: "3") || bytes[14] == UInt8(ascii: "4"),
                [UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(bytes[19])
            else { return nil }
        }
        self.value = lower
    }

    var hash: String { SecretHash.sha256Hex(self.value) }
}

/// The state of an OTP at redemption (§4.1): `redeemed` once a redemption time is set, `expired` past its expiry,
/// else `valid`.
enum OTPState: String, Sendable, Codable {
    case valid, expired, redeemed
}

/// The outcome of one redemption call: the state it found (or made: `valid` only for the call that redeemed it), and
/// the device's strength when the OTP is known.
struct OTPRedemption: Sendable, Equatable {
    var state: OTPState
    var strongClientIntegrityCheck: Bool
    /// The submission attempt that redeemed it, when one named itself.
    var redeemedBy: UUID? = nil
}

/// A new OTP to store with the device proof that came with it.
struct OTPRecord: Sendable, Equatable {
    var otp: OTP
    var kind: OTPKind
    var platform: Platform
    var expiresAt: Date
    /// Android only: the verdict's flags (nil for iOS, §4.1 `strongClientIntegrityCheck`).
    var integrity: AndroidIntegrity?
}
