// What the data-donation service reads and writes, and the rules the writes must keep under concurrency.

import ENAttestation
import Foundation

/// Everything one accepted request stores, written in one transaction: its device-proof bookkeeping (the salt, the
/// Android ID's quota, the device token's single use, the API token's quota) and its content (analytics rows or an
/// OTP). A rule that fails inside the transaction rolls everything back, so a refused request stores nothing.
struct DonationWrite: Sendable {
    /// Android: the request's salt (SHA-256 hex), stored at its first use.
    var saltHash: String?
    /// Android self-reports: the peppered Android ID, refused when it was used within `androidIDQuota`.
    var androidID: String?
    /// The same Android ID under the pepper's earlier keys: a quota taken under one of them counts too.
    var earlierAndroidIDs: [String] = []
    var androidIDQuota: TimeInterval = 0
    /// iOS: the device token (SHA-256 hex), usable once.
    var deviceToken: String?
    /// iOS: the API token and the scenario whose quota it spends.
    var apiToken: APITokenUse?
    var analytics: AnalyticsDonation?
    var otp: OTPRecord?
    var now: Date
}

/// An iOS API token's use by one request (§4.3 steps 2 and 6).
struct APITokenUse: Sendable, Equatable {
    var tokenHash: String
    var scenario: APITokenScenario
    /// For a token not stored yet: the last day of the month it is created in, its expiry date.
    var expirationDate: DonationDate
}

/// The quotas of §4.3 step 2 (`ProdPpacIosRateLimitStrategy`), by scenario.
enum APITokenScenario: String, Sendable {
    /// Analytics: once per `interval` (the reference: 86,100 s).
    case analytics
    /// Survey OTPs: once per calendar month.
    case survey
    /// Self-report OTPs: once per `interval` (the reference: 90 days).
    case selfReport = "self_report"
    /// Error-log OTPs: no quota (the reference runs no check at all; here the device is attested and the token
    /// recorded, but not limited).
    case errorLog = "error_log"
}

/// A stored API token, as the local check needs it.
struct StoredAPIToken: Sendable, Equatable {
    var expirationDate: DonationDate
    var lastUsedAnalytics: Date?
    var lastUsedSurvey: Date?
    var lastUsedSelfReport: Date?
}

/// A rule of the write transaction that refused the request; nothing was stored.
enum WriteRefusal: Error, Equatable {
    case saltRedeemed
    case androidIDQuota
    case deviceTokenRedeemed
    case apiTokenQuota
    case otpExists
}

/// What the retention pass deleted, by table.
struct DonationRetentionOutcome: Sendable, Equatable {
    var deleted: [String: Int]
}

protocol DonationRepository: Sendable {
    /// When the salt (SHA-256 hex) was first used, or nil.
    func saltCreated(_ saltHash: String) async throws -> Date?
    /// The stored API token, or nil.
    func apiToken(_ tokenHash: String) async throws -> StoredAPIToken?
    /// Whether the device token was used before.
    func deviceTokenUsed(_ tokenHash: String) async throws -> Bool
    /// Stores `write` in one transaction, or throws `WriteRefusal` having stored nothing.
    func store(_ write: DonationWrite, policy: QuotaPolicy) async throws
    /// Redeems the OTP of `kind` once, recording `submission` as the attempt that did: the call that redeems it gets
    /// `valid`, and so does a repeat by the same attempt (its answer was lost); nil when unknown.
    func redeem(_ otpHash: String, kind: OTPKind, now: Date, submission: UUID?) async throws -> OTPRedemption?
    /// Whether, and by which attempt, the OTP of `kind` with `otpHash` was redeemed (state `valid`: not yet, and usable;
    /// `expired`; `redeemed`); nil when unknown.
    func redemption(_ otpHash: String, kind: OTPKind, now: Date) async throws -> OTPRedemption?
    /// Deletes what outlived its retention; nil when another replica runs the pass.
    func applyRetention(_ retention: DonationRetention, now: Date) async throws -> DonationRetentionOutcome?
}
