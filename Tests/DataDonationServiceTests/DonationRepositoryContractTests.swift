// The in-memory donation repository keeps the rules of the PostgreSQL one: every scenario runs against both.

import ENAttestation
import ENModels
import ENTestSupport
import Foundation
import Testing

@testable import DataDonationService

@Suite("Donation repository contract (PostgreSQL and in memory)")
struct DonationRepositoryContractTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)
    static let day: TimeInterval = 86_400
    static let policy = QuotaPolicy()

    private func withRepository(
        _ backend: RepositoryBackend,
        _ body: @Sendable (any DonationRepository) async throws -> Void
    ) async throws {
        try await backend.run(
            migrating: DataDonationMigrations.group,
            inMemory: { InMemoryDonationRepository(nhsAnalytics: InMemoryNHSAnalyticsRepository()) },
            postgres: { PostgresDonationRepository(client: $0.client, logger: $0.logger) },
            body
        )
    }

    /// A SHA-256 hex value named by `seed`: the form of every salt, token and OTP hash the repository stores.
    private static func hash(_ seed: String) -> String { TestIDs.hashedGUID(seed) }

    /// Stores `write`; the refusal it met, or nil when it was stored.
    private static func refusal(
        _ repository: any DonationRepository,
        _ write: DonationWrite
    ) async throws -> WriteRefusal? {
        do {
            try await repository.store(write, policy: Self.policy)
            return nil
        } catch let refusal as WriteRefusal {
            return refusal
        }
    }

    private static func otp(_ text: String) throws -> OTP {
        try #require(OTP(text))
    }

    @Test(
        "a salt is usable for its validity after its first use, and a refused write stores nothing",
        arguments: RepositoryBackend.allCases
    )
    func salt(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository async throws in
            let salt = Self.hash("salt")
            #expect(try await repository.saltCreated(salt) == nil)
            #expect(try await Self.refusal(repository, DonationWrite(saltHash: salt, now: Self.now)) == nil)
            #expect(try await repository.saltCreated(salt) == Self.now)

            let later = Self.now.addingTimeInterval(Self.policy.saltValidity)
            #expect(try await Self.refusal(repository, DonationWrite(saltHash: salt, now: later)) == nil)
            // Past the validity the salt is refused, and the device token of the same write is not kept.
            let tooLate = later.addingTimeInterval(1)
            let write = DonationWrite(saltHash: salt, deviceToken: Self.hash("device"), now: tooLate)
            #expect(try await Self.refusal(repository, write) == .saltRedeemed)
            #expect(try await repository.deviceTokenUsed(Self.hash("device")) == false)
            #expect(try await repository.saltCreated(salt) == Self.now)
        }
    }

    @Test(
        "an Android ID is refused within its quota, also under an earlier pepper, and usable once it ends",
        arguments: RepositoryBackend.allCases
    )
    func androidID(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository async throws in
            func write(_ id: String, earlier: [String] = [], at time: Date) -> DonationWrite {
                DonationWrite(androidID: id, earlierAndroidIDs: earlier, androidIDQuota: Self.day, now: time)
            }
            #expect(try await Self.refusal(repository, write("a", at: Self.now)) == nil)
            #expect(
                try await Self.refusal(repository, write("a", at: Self.now.addingTimeInterval(Self.day - 1)))
                    == .androidIDQuota
            )
            #expect(
                try await Self.refusal(repository, write("b", earlier: ["a"], at: Self.now.addingTimeInterval(60)))
                    == .androidIDQuota
            )
            #expect(
                try await Self.refusal(repository, write("b", earlier: ["c"], at: Self.now.addingTimeInterval(60)))
                    == nil
            )
            #expect(try await Self.refusal(repository, write("a", at: Self.now.addingTimeInterval(Self.day))) == nil)
        }
    }

    @Test("a device token is used once", arguments: RepositoryBackend.allCases)
    func deviceToken(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository async throws in
            let token = Self.hash("device")
            #expect(try await repository.deviceTokenUsed(token) == false)
            #expect(try await Self.refusal(repository, DonationWrite(deviceToken: token, now: Self.now)) == nil)
            #expect(try await repository.deviceTokenUsed(token))
            let again = DonationWrite(deviceToken: token, now: Self.now.addingTimeInterval(3 * Self.day))
            #expect(try await Self.refusal(repository, again) == .deviceTokenRedeemed)
        }
    }

    @Test(
        "an API token's quotas: analytics and self-reports per interval, surveys per calendar month, error logs unlimited",
        arguments: RepositoryBackend.allCases
    )
    func apiToken(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository async throws in
            let hash = Self.hash("api")
            let expiry = DonationDate(text: "2023-11-30")
            func use(_ scenario: APITokenScenario, at time: Date) async throws -> WriteRefusal? {
                let token = APITokenUse(tokenHash: hash, scenario: scenario, expirationDate: expiry)
                return try await Self.refusal(repository, DonationWrite(apiToken: token, now: time))
            }
            // 2023-11-14 22:13:20 UTC.
            let start = Self.now
            #expect(try await use(.analytics, at: start) == nil)
            #expect(
                try await repository.apiToken(hash)
                    == StoredAPIToken(expirationDate: expiry, lastUsedAnalytics: start)
            )
            #expect(
                try await use(.analytics, at: start.addingTimeInterval(Self.policy.analyticsInterval - 1))
                    == .apiTokenQuota
            )
            #expect(try await use(.analytics, at: start.addingTimeInterval(Self.policy.analyticsInterval)) == nil)

            #expect(try await use(.survey, at: start) == nil)
            #expect(try await use(.survey, at: start.addingTimeInterval(15 * Self.day)) == .apiTokenQuota)
            // 2023-12-01: a new month.
            let december = Date(timeIntervalSince1970: 1_701_388_800)
            #expect(try await use(.survey, at: december) == nil)

            #expect(try await use(.selfReport, at: start) == nil)
            #expect(
                try await use(.selfReport, at: start.addingTimeInterval(Self.policy.selfReportInterval - 1))
                    == .apiTokenQuota
            )
            #expect(try await use(.errorLog, at: start) == nil)
            #expect(try await use(.errorLog, at: start) == nil)

            let stored = try #require(try await repository.apiToken(hash))
            #expect(stored.lastUsedAnalytics == start.addingTimeInterval(Self.policy.analyticsInterval))
            #expect(stored.lastUsedSurvey == december)
            #expect(stored.lastUsedSelfReport == start)
        }
    }

    @Test(
        "an OTP is stored once and redeemed once; the attempt that redeemed it may ask again",
        arguments: RepositoryBackend.allCases
    )
    func otp(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository async throws in
            let strong = AndroidIntegrity(
                basicIntegrity: true,
                ctsProfileMatch: true,
                evaluationTypeBasic: false,
                evaluationTypeHardwareBacked: true
            )
            let weak = AndroidIntegrity(
                basicIntegrity: true,
                ctsProfileMatch: false,
                evaluationTypeBasic: true,
                evaluationTypeHardwareBacked: false
            )
            let expires = Self.now.addingTimeInterval(3600)
            let survey = try Self.otp("8c5f1e8a-3b8f-4b1e-9a0e-1f2d3c4b5a69")
            let selfReport = try Self.otp("0b1c2d3e-4f50-4a61-8b72-93a4b5c6d7e8")
            let ios = try Self.otp("f0e1d2c3-b4a5-4697-8879-6a5b4c3d2e1f")
            let records = [
                OTPRecord(otp: survey, kind: .survey, platform: .android, expiresAt: expires, integrity: strong),
                OTPRecord(otp: selfReport, kind: .selfReport, platform: .android, expiresAt: expires, integrity: weak),
                OTPRecord(otp: ios, kind: .errorLog, platform: .ios, expiresAt: expires),
            ]
            for record in records {
                #expect(try await Self.refusal(repository, DonationWrite(otp: record, now: Self.now)) == nil)
            }
            var duplicate = records[0]
            duplicate.kind = .errorLog
            #expect(try await Self.refusal(repository, DonationWrite(otp: duplicate, now: Self.now)) == .otpExists)

            let attempt = UUID()
            #expect(
                try await repository.redemption(survey.hash, kind: .survey, now: Self.now)
                    == OTPRedemption(state: .valid, strongClientIntegrityCheck: true)
            )
            #expect(try await repository.redemption(survey.hash, kind: .errorLog, now: Self.now) == nil)
            #expect(
                try await repository.redeem(survey.hash, kind: .errorLog, now: Self.now, submission: attempt) == nil
            )
            #expect(
                try await repository.redeem(Self.hash("unknown"), kind: .survey, now: Self.now, submission: nil) == nil
            )
            #expect(
                try await repository.redeem(survey.hash, kind: .survey, now: Self.now, submission: attempt)
                    == OTPRedemption(state: .valid, strongClientIntegrityCheck: true, redeemedBy: attempt)
            )
            #expect(
                try await repository.redeem(survey.hash, kind: .survey, now: Self.now, submission: attempt)
                    == OTPRedemption(state: .valid, strongClientIntegrityCheck: true, redeemedBy: attempt)
            )
            #expect(
                try await repository.redeem(survey.hash, kind: .survey, now: Self.now, submission: UUID())
                    == OTPRedemption(state: .redeemed, strongClientIntegrityCheck: true, redeemedBy: attempt)
            )
            #expect(
                try await repository.redeem(survey.hash, kind: .survey, now: Self.now, submission: nil)
                    == OTPRedemption(state: .redeemed, strongClientIntegrityCheck: true, redeemedBy: attempt)
            )

            #expect(
                try await repository.redeem(selfReport.hash, kind: .selfReport, now: expires, submission: nil)
                    == OTPRedemption(state: .expired, strongClientIntegrityCheck: false)
            )
            #expect(
                try await repository.redeem(ios.hash, kind: .errorLog, now: Self.now, submission: nil)
                    == OTPRedemption(state: .valid, strongClientIntegrityCheck: true)
            )
            #expect(
                try await repository.redemption(ios.hash, kind: .errorLog, now: Self.now)
                    == OTPRedemption(state: .redeemed, strongClientIntegrityCheck: true)
            )
        }
    }

    @Test(
        "retention deletes each table's rows past their lifetime and counts them",
        arguments: RepositoryBackend.allCases
    )
    func retention(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository async throws in
            let old = Self.now.addingTimeInterval(-20 * Self.day)
            let recent = Self.now.addingTimeInterval(-3600)
            for (seed, time, otpText) in [
                ("old", old, "11111111-2222-4333-8444-555555555555"),
                ("recent", recent, "66666666-7777-4888-9999-aaaaaaaaaaaa"),
            ] {
                let analytics = try #require(
                    AnalyticsDonation(
                        platform: .android,
                        day: time,
                        risk: [PPAExposureRiskMetadata()],
                        windows: [],
                        testResults: [],
                        keySubmissions: [],
                        user: nil,
                        client: ClientRow(android: PPADataAndroid(), submitted: time)
                    )
                )
                let otp = OTPRecord(
                    otp: try Self.otp(otpText),
                    kind: .survey,
                    platform: .ios,
                    expiresAt: time.addingTimeInterval(3600)
                )
                let token = APITokenUse(
                    tokenHash: Self.hash("api-\(seed)"),
                    scenario: .analytics,
                    expirationDate: DonationDate(time)
                )
                let write = DonationWrite(
                    saltHash: Self.hash("salt-\(seed)"),
                    androidID: "id-\(seed)",
                    androidIDQuota: 7 * Self.day,
                    deviceToken: Self.hash("device-\(seed)"),
                    apiToken: token,
                    analytics: analytics,
                    otp: otp,
                    now: time
                )
                #expect(try await Self.refusal(repository, write) == nil)
            }

            let outcome = try await repository.applyRetention(DonationRetention(), now: Self.now)
            #expect(
                outcome?.deleted == [
                    "exposure_risk_metadata": 0, "test_result_metadata": 0, "key_submission_metadata": 0,
                    "exposure_window": 0, "client_metadata": 1, "nhs_mobile_analytics": 0,
                    "nhs_mobile_analytics_event": 0, "one_time_password": 1, "api_token": 1, "device_token": 1,
                    "salt": 1, "android_id": 1,
                ]
            )
            #expect(try await repository.saltCreated(Self.hash("salt-old")) == nil)
            #expect(try await repository.saltCreated(Self.hash("salt-recent")) == recent)
            #expect(try await repository.deviceTokenUsed(Self.hash("device-old")) == false)
            #expect(try await repository.deviceTokenUsed(Self.hash("device-recent")))
            #expect(try await repository.apiToken(Self.hash("api-old")) == nil)
            #expect(try await repository.apiToken(Self.hash("api-recent")) != nil)
            let again = try await repository.applyRetention(DonationRetention(), now: Self.now)
            #expect(again?.deleted.values.allSatisfy { $0 == 0 } == true)
        }
    }
}
