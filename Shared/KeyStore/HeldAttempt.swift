// A submission attempt held in the key store while its credential is spent.

package import Foundation

/// The kind of credential a submission spends; its SHA-256 is what the spender stores too.
package enum HeldCredential: String, Sendable, Equatable, Codable {
    /// A CWA TAN, at verification-service.
    case tan = "TAN"
    /// An NHS diagnosis key submission token, at verification-service.
    case nhsToken = "NHS_TOKEN"
    /// A self-report one-time password, at data-donation-service.
    case otp = "OTP"
}

/// One attempt to submit: its id (named to the spender of the credential), the credential's kind and SHA-256 (lower-case
/// hex), the draft of what it writes once the credential is spent (in the caller's encoding), when it was held and
/// when the recovery is to look at it next (both by the clock of the service that holds it).
package struct HeldAttempt: Sendable, Equatable {
    package var id: UUID
    package var credential: HeldCredential
    package var credentialHash: String
    package var draft: [UInt8]
    package var heldSince: Date
    package var due: Date

    package init(
        id: UUID,
        credential: HeldCredential,
        credentialHash: String,
        draft: [UInt8],
        heldSince: Date,
        due: Date
    ) {
        self.id = id
        self.credential = credential
        self.credentialHash = credentialHash
        self.draft = draft
        self.heldSince = heldSince
        self.due = due
    }
}

/// How many attempts are held, and since when the oldest of them.
package struct HeldAttemptCount: Sendable, Equatable {
    package var count: Int
    package var oldest: Date?

    package init(count: Int, oldest: Date?) {
        self.count = count
        self.oldest = oldest
    }
}

extension HeldAttempt {
    /// A random credential hash, for a submission no other attempt shares a credential with (tests, tools).
    package static func unrelatedCredentialHash() -> String {
        (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "").lowercased()
    }
}

extension KeySubmission {
    /// The submission as a draft (JSON), for `HeldAttempt.draft`.
    package func draft() throws -> [UInt8] {
        Array(try JSONEncoder().encode(self))
    }

    /// The submission of a draft made by `draft()`.
    package init(draft: [UInt8]) throws {
        self = try JSONDecoder().decode(KeySubmission.self, from: Data(draft))
    }
}
