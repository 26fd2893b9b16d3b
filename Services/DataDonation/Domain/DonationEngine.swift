// Device proof, then storage: the order of cwa-satellites §4.2 (Android) and §4.3 (iOS) for every endpoint.

import Crypto
import ENAttestation
import ENCrypto
import ENModels
import ENPersistence
import ENServiceKit
import Foundation
import Logging

/// What an accepted request stores besides its device-proof bookkeeping.
enum DonationContent: Sendable {
    case analytics(AnalyticsDonation)
    case otp(OTP, OTPKind)

    var scenario: AttestationScenario {
        switch self {
        case .analytics: .analytics
        case .otp(_, let kind): kind.scenario
        }
    }
}

/// Android's verdict sources: `ANDROID_ATTESTATION` decides which are accepted. The app sends either kind in
/// `PPACAndroid.safetyNetJws`: a SafetyNet statement is a JWS (three dot-separated parts), a Play Integrity token a
/// JWE (five), so the service tells them apart without a new field.
struct AndroidAttestor: Sendable {
    var safetyNet: SafetyNetVerifier?
    var playIntegrity: PlayIntegrityVerifier?

    func verify(
        _ token: String,
        salt: Data,
        payload: Data,
        scenario: AttestationScenario,
        now: Date
    ) async -> Result<AndroidIntegrity, AttestationFailure> {
        guard !token.isEmpty else { return .failure(.missingMandatoryAuthenticationFields) }
        let parts = token.utf8.count(where: { $0 == UInt8(ascii: ".") }) + 1
        if parts == 5, let verifier = self.playIntegrity {
            return verifier.verify(token: token, salt: salt, payload: payload, scenario: scenario, now: now)
        }
        if parts == 3, let verifier = self.safetyNet {
            return await verifier.verify(jws: token, salt: salt, payload: payload, scenario: scenario, now: now)
        }
        return .failure(.jwsSignatureVerificationFailed)
    }
}

struct DonationEngine: Sendable {
    let repository: any DonationRepository
    let android: AndroidAttestor
    let deviceCheck: any DeviceCheck
    let quotas: QuotaPolicy
    let lifetimes: OTPLifetimes
    /// HMAC key of stored Android IDs (`ANDROID_ID_PEPPER_FILE`, its first key).
    let androidIDPepper: KeyRing
    let clock: WallClock
    let metrics: DataDonationMetrics
    let logger: Logger

    /// An Android request: salt window, attestation, then (self-reports) the Android ID, then one write. Returns
    /// when the content expires (an OTP's expiry; now for analytics).
    func android(
        _ authentication: PPACAndroid,
        payload: Data,
        androidID: Data? = nil,
        content: DonationContent
    ) async throws(DonationFailure) -> Date {
        let now = self.clock.now
        let scenario = content.scenario
        // Step 1: the salt must be present, and a known one young enough.
        guard !authentication.salt.isEmpty, let salt = decodeBase64(authentication.salt) else {
            throw .attestation(.missingMandatoryAuthenticationFields)
        }
        let saltHash = SecretHash.sha256Hex(bytes: salt)
        let created: Date?
        do {
            created = try await self.repository.saltCreated(saltHash)
        } catch {
            throw self.unavailable(error)
        }
        if let created, now.timeIntervalSince(created) > self.quotas.saltValidity { throw .saltRedeemed }
        // Steps 2–9.
        let integrity: AndroidIntegrity
        switch await self.android.verify(
            authentication.safetyNetJws,
            salt: salt,
            payload: payload,
            scenario: scenario,
            now: now
        ) {
        case .success(let verdict): integrity = verdict
        case .failure(let failure): throw .attestation(failure)
        }
        var write = DonationWrite(saltHash: saltHash, now: now)
        // Step 10.
        if scenario == .selfReport {
            guard let androidID, (8...16).contains(androidID.count) else { throw .androidIDInvalid }
            // Stored under the current key; earlier keys' forms still count against the quota, so rotating the
            // pepper does not reset it.
            let forms = self.androidIDPepper.entries.map {
                Hex.encode(HMAC<SHA256>.authenticationCode(for: androidID, using: $0.key))
            }
            write.androidID = forms[0]
            write.earlierAndroidIDs = Array(forms.dropFirst())
            write.androidIDQuota = self.quotas.selfReportInterval
        }
        return try await self.store(content, platform: .android, integrity: integrity, write)
    }

    /// An iOS request: syntax, the API token's local check, Apple's bits, the device token's single use, blocked
    /// devices, a new API token's month, then one write.
    func ios(_ authentication: PPACIOS, content: DonationContent) async throws(DonationFailure) -> Date {
        let now = self.clock.now
        // Step 1, for every scenario (the reference checks the syntax for analytics only).
        let deviceToken = authentication.deviceToken
        guard (1...3500).contains(deviceToken.utf8.count), Data(base64Encoded: deviceToken) != nil,
            let apiToken = OTP(authentication.apiToken)
        else { throw .deviceTokenSyntax }
        if case .analytics = content, !(2500...3500).contains(deviceToken.utf8.count) { throw .deviceTokenSyntax }
        let scenario = Self.tokenScenario(content)
        let tokenHash = SecretHash.sha256Hex(apiToken.value)
        let deviceHash = SecretHash.sha256Hex(deviceToken)
        // Step 2.
        let stored: StoredAPIToken?
        do {
            stored = try await self.repository.apiToken(tokenHash)
        } catch {
            throw self.unavailable(error)
        }
        if let stored {
            if DonationDate(now).text > stored.expirationDate.text { throw .apiTokenExpired }
            if !self.quotaAvailable(stored, scenario: scenario, now: now) { throw .apiTokenQuotaExceeded }
        }
        // Step 3.
        let bits: DeviceBits?
        do {
            bits = try await self.deviceCheck.queryTwoBits(deviceToken: deviceToken)
        } catch {
            switch error {
            case .invalidDeviceToken: throw .deviceTokenInvalid
            case .unavailable(let reason):
                self.logger.warning("DeviceCheck unavailable", metadata: ["devicecheck.failure": "\(reason)"])
                throw .deviceCheckUnavailable
            }
        }
        // Step 4 (checked again, atomically, by the write).
        do {
            if try await self.repository.deviceTokenUsed(deviceHash) { throw DonationFailure.deviceTokenRedeemed }
        } catch let failure as DonationFailure {
            throw failure
        } catch {
            throw self.unavailable(error)
        }
        // Step 5.
        if let bits, bits.bit0, bits.bit1 { throw .deviceBlocked }
        // Step 6: one new API token per device and month.
        if stored == nil {
            if bits?.lastUpdateTime == Self.month(now) { throw .apiTokenAlreadyIssued }
            do {
                try await self.deviceCheck.updateTwoBits(deviceToken: deviceToken, bit0: false, bit1: false)
            } catch {
                switch error {
                case .invalidDeviceToken: throw .deviceTokenInvalid
                case .unavailable: throw .deviceCheckUnavailable
                }
            }
        }
        var write = DonationWrite(deviceToken: deviceHash, now: now)
        write.apiToken = APITokenUse(
            tokenHash: tokenHash,
            scenario: scenario,
            expirationDate: Self.lastDayOfMonth(now)
        )
        return try await self.store(content, platform: .ios, integrity: nil, write)
    }

    /// Adds the content to `write` and stores it; maps the transaction's refusals.
    private func store(
        _ content: DonationContent,
        platform: Platform,
        integrity: AndroidIntegrity?,
        _ write: DonationWrite
    ) async throws(DonationFailure) -> Date {
        var write = write
        let expires: Date
        switch content {
        case .analytics(let donation):
            write.analytics = donation
            expires = write.now
        case .otp(let otp, let kind):
            expires = write.now.addingTimeInterval(self.lifetimes.lifetime(kind))
            write.otp = OTPRecord(otp: otp, kind: kind, platform: platform, expiresAt: expires, integrity: integrity)
        }
        do {
            try await self.repository.store(write, policy: self.quotas)
        } catch let refusal as WriteRefusal {
            switch refusal {
            case .saltRedeemed: throw .saltRedeemed
            case .androidIDQuota: throw .deviceQuotaExceeded
            case .deviceTokenRedeemed: throw .deviceTokenRedeemed
            case .apiTokenQuota: throw .apiTokenQuotaExceeded
            case .otpExists: throw .otpAlreadyExists
            }
        } catch {
            throw self.unavailable(error)
        }
        return expires
    }

    private func unavailable(_ error: any Error) -> DonationFailure {
        self.logger.error("Data donation storage failed", metadata: ErrorMetadata.of(error))
        return .storageUnavailable
    }

    private static func tokenScenario(_ content: DonationContent) -> APITokenScenario {
        switch content {
        case .analytics: .analytics
        case .otp(_, .survey): .survey
        case .otp(_, .errorLog): .errorLog
        case .otp(_, .selfReport): .selfReport
        }
    }

    /// §4.3 step 2's quotas on a stored token.
    private func quotaAvailable(_ token: StoredAPIToken, scenario: APITokenScenario, now: Date) -> Bool {
        switch scenario {
        case .analytics:
            token.lastUsedAnalytics.map { now.timeIntervalSince($0) >= self.quotas.analyticsInterval } ?? true
        case .selfReport:
            token.lastUsedSelfReport.map { now.timeIntervalSince($0) >= self.quotas.selfReportInterval } ?? true
        case .survey: token.lastUsedSurvey.map { Self.month($0) != Self.month(now) } ?? true
        case .errorLog: true
        }
    }

    /// `YYYY-MM` of `date` in UTC, as Apple's `last_update_time`.
    static func month(_ date: Date) -> String {
        let parts = DonationDate.utc.dateComponents([.year, .month], from: date)
        return String(format: "%04d-%02d", parts.year ?? 1970, parts.month ?? 1)
    }

    static func lastDayOfMonth(_ date: Date) -> DonationDate {
        let calendar = DonationDate.utc
        let start = calendar.date(from: calendar.dateComponents([.year, .month], from: date)) ?? date
        let next = calendar.date(byAdding: .month, value: 1, to: start) ?? date
        return DonationDate(next.addingTimeInterval(-86_400))
    }
}
