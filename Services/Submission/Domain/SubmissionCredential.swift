// What authorises a real submission: a TAN or a self-report's one-time password (cwa-server §1.2).

import Foundation

/// The credential of a real submission, as its header carried it.
enum SubmissionCredential: Sendable, Equatable {
    /// `cwa-authorization`: a TAN that verification-service uses up.
    case tan(String)
    /// `cwa-otp`: a self-report's one-time password that data-donation-service redeems. Never logged.
    case otp(String)

    /// An OTP as the `cwa-otp` header carries it: a UUID, returned in lower case; nil when it is anything else.
    static func parseOTP(_ value: String) -> String? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard text.utf8.count == 36, UUID(uuidString: text) != nil else { return nil }
        return text.lowercased()
    }
}
