// The submission types a self-report's one-time password authorises (cwa-server §1.2, §1.5 rule 11).

import ENModels

extension SubmissionPayload.SubmissionType {
    /// Whether this is one of the self-report types (3…9), which only a `cwa-otp` may authorise (§1.5 rule 11).
    var isSelfReport: Bool {
        (Self.srsSelfTest.rawValue...Self.srsOther.rawValue).contains(self.rawValue)
    }
}
