// The data-donation tables in memory, for route tests and local runs without a database.

import ENAttestation
import Foundation

/// What `PostgresDonationRepository` stores, under the same rules: a write works on a copy of the tables and
/// replaces them only when every rule held, so a refused request stores nothing, as a rolled-back transaction does.
/// The actor serialises writes, which is what the row locks of the PostgreSQL statements achieve.
actor InMemoryDonationRepository: DonationRepository {
    /// The rows of each table, as the PostgreSQL columns hold them.
    struct Tables: Sendable {
        var salts: [String: Date] = [:]
        /// Android ID hash → when its quota ends.
        var androidIDs: [String: Date] = [:]
        /// Device token hash → when it was used.
        var deviceTokens: [String: Date] = [:]
        var apiTokens: [String: StoredAPIToken] = [:]
        var risk: [RiskRow] = []
        var testResults: [TestResultRow] = []
        var keySubmissions: [KeySubmissionRow] = []
        var windows: [WindowRow] = []
        var client: [ClientRow] = []
        var otps: [String: StoredOTP] = [:]
    }

    /// A row of `one_time_password`.
    struct StoredOTP: Sendable {
        var record: OTPRecord
        var redeemedAt: Date?
        var redeemedBy: UUID?

        /// iOS always counts as strong; Android when every flag of the verdict says so.
        var strongIntegrity: Bool {
            guard self.record.platform == .android else { return true }
            let integrity = self.record.integrity
            return integrity?.basicIntegrity == true && integrity?.ctsProfileMatch == true
                && integrity?.evaluationTypeHardwareBacked == true
        }

        func state(at now: Date) -> OTPState {
            if self.redeemedAt != nil { return .redeemed }
            return self.record.expiresAt <= now ? .expired : .valid
        }
    }

    private(set) var tables = Tables()
    /// The NHS analytics the retention pass prunes with the CWA tables, when the service keeps them in memory too.
    private let nhsAnalytics: InMemoryNHSAnalyticsRepository?

    init(nhsAnalytics: InMemoryNHSAnalyticsRepository? = nil) {
        self.nhsAnalytics = nhsAnalytics
    }

    func saltCreated(_ saltHash: String) -> Date? {
        self.tables.salts[saltHash]
    }

    func apiToken(_ tokenHash: String) -> StoredAPIToken? {
        self.tables.apiTokens[tokenHash]
    }

    func deviceTokenUsed(_ tokenHash: String) -> Bool {
        self.tables.deviceTokens[tokenHash] != nil
    }

    func store(_ write: DonationWrite, policy: QuotaPolicy) throws {
        var tables = self.tables
        let now = write.now
        if let salt = write.saltHash {
            let created = tables.salts[salt] ?? now
            tables.salts[salt] = created
            guard created >= now.addingTimeInterval(-policy.saltValidity) else { throw WriteRefusal.saltRedeemed }
        }
        if let id = write.androidID {
            let earlierTaken = write.earlierAndroidIDs.contains { (tables.androidIDs[$0] ?? .distantPast) > now }
            guard !earlierTaken else { throw WriteRefusal.androidIDQuota }
            if let expires = tables.androidIDs[id], expires > now { throw WriteRefusal.androidIDQuota }
            tables.androidIDs[id] = now.addingTimeInterval(write.androidIDQuota)
        }
        if let device = write.deviceToken {
            guard tables.deviceTokens[device] == nil else { throw WriteRefusal.deviceTokenRedeemed }
            tables.deviceTokens[device] = now
        }
        if let token = write.apiToken {
            tables.apiTokens[token.tokenHash] = try Self.spend(
                token,
                stored: tables.apiTokens[token.tokenHash],
                now: now,
                policy: policy
            )
        }
        if let analytics = write.analytics {
            tables.risk += analytics.risk
            tables.testResults += analytics.testResults
            tables.keySubmissions += analytics.keySubmissions
            tables.windows += analytics.windows
            tables.client += analytics.client
        }
        if let otp = write.otp {
            guard tables.otps[otp.otp.hash] == nil else { throw WriteRefusal.otpExists }
            tables.otps[otp.otp.hash] = StoredOTP(record: otp)
        }
        self.tables = tables
    }

    /// The token after this use: a new one with the scenario's use recorded, or the stored one with its quota spent.
    private static func spend(
        _ token: APITokenUse,
        stored: StoredAPIToken?,
        now: Date,
        policy: QuotaPolicy
    ) throws -> StoredAPIToken {
        guard var spent = stored else {
            return StoredAPIToken(
                expirationDate: token.expirationDate,
                lastUsedAnalytics: token.scenario == .analytics ? now : nil,
                lastUsedSurvey: token.scenario == .survey ? now : nil,
                lastUsedSelfReport: token.scenario == .selfReport ? now : nil
            )
        }
        func available(_ last: Date?, interval: TimeInterval) -> Bool {
            last.map { $0 <= now.addingTimeInterval(-interval) } ?? true
        }
        switch token.scenario {
        case .analytics:
            guard available(spent.lastUsedAnalytics, interval: policy.analyticsInterval) else {
                throw WriteRefusal.apiTokenQuota
            }
            spent.lastUsedAnalytics = now
        case .selfReport:
            guard available(spent.lastUsedSelfReport, interval: policy.selfReportInterval) else {
                throw WriteRefusal.apiTokenQuota
            }
            spent.lastUsedSelfReport = now
        case .survey:
            // Once per calendar month (UTC): `yyyy-MM` of the days compared as text.
            let month = { (date: Date) in DonationDate(date).text.prefix(7) }
            if let last = spent.lastUsedSurvey, month(last) >= month(now) { throw WriteRefusal.apiTokenQuota }
            spent.lastUsedSurvey = now
        case .errorLog:
            break
        }
        return spent
    }

    func redeem(_ otpHash: String, kind: OTPKind, now: Date, submission: UUID?) -> OTPRedemption? {
        guard var found = self.redemption(otpHash, kind: kind, now: now) else { return nil }
        switch found.state {
        case .valid:
            self.tables.otps[otpHash]?.redeemedAt = now
            self.tables.otps[otpHash]?.redeemedBy = submission
            found.redeemedBy = submission
        case .redeemed:
            // The attempt that redeemed it asks again (its answer was lost).
            if let submission, found.redeemedBy == submission { found.state = .valid }
        case .expired:
            break
        }
        return found
    }

    func redemption(_ otpHash: String, kind: OTPKind, now: Date) -> OTPRedemption? {
        guard let stored = self.tables.otps[otpHash], stored.record.kind == kind else { return nil }
        return OTPRedemption(
            state: stored.state(at: now),
            strongClientIntegrityCheck: stored.strongIntegrity,
            redeemedBy: stored.redeemedBy
        )
    }

    func applyRetention(_ retention: DonationRetention, now: Date) async -> DonationRetentionOutcome? {
        var deleted: [String: Int] = [:]
        let day = { (interval: TimeInterval) in DonationDate(now.addingTimeInterval(-interval)).text }
        func prune<Row>(_ rows: inout [Row], _ table: String, keep: TimeInterval, _ submitted: (Row) -> DonationDate) {
            let cutoff = day(keep)
            let before = rows.count
            rows.removeAll { submitted($0).text < cutoff }
            deleted[table] = before - rows.count
        }
        prune(&self.tables.risk, "exposure_risk_metadata", keep: retention.riskMetadata) { $0.submittedAt }
        prune(&self.tables.testResults, "test_result_metadata", keep: retention.analytics) { $0.submittedAt }
        prune(&self.tables.keySubmissions, "key_submission_metadata", keep: retention.analytics) { $0.submittedAt }
        prune(&self.tables.windows, "exposure_window", keep: retention.analytics) { $0.submittedAt }
        prune(&self.tables.client, "client_metadata", keep: retention.analytics) { $0.submittedAt }
        func remove<Value>(_ rows: inout [String: Value], _ table: String, where gone: (Value) -> Bool) {
            let before = rows.count
            rows = rows.filter { !gone($0.value) }
            deleted[table] = before - rows.count
        }
        let otpCutoff = now.addingTimeInterval(-retention.otp)
        remove(&self.tables.otps, "one_time_password") { ($0.redeemedAt ?? $0.record.expiresAt) < otpCutoff }
        let apiCutoff = day(retention.apiTokenAfterExpiry)
        remove(&self.tables.apiTokens, "api_token") { $0.expirationDate.text < apiCutoff }
        let deviceCutoff = now.addingTimeInterval(-retention.deviceToken)
        remove(&self.tables.deviceTokens, "device_token") { $0 < deviceCutoff }
        let saltCutoff = now.addingTimeInterval(-retention.salt)
        remove(&self.tables.salts, "salt") { $0 < saltCutoff }
        remove(&self.tables.androidIDs, "android_id") { $0 <= now }
        let nhs = await self.nhsAnalytics?.deleteSubmitted(before: day(retention.analytics))
        deleted["nhs_mobile_analytics"] = nhs?.packets ?? 0
        deleted["nhs_mobile_analytics_event"] = nhs?.events ?? 0
        return DonationRetentionOutcome(deleted: deleted)
    }
}
