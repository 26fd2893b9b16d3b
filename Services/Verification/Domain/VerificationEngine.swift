// The rules of cwa-satellites §1.4: registration, result polling, TAN issuance and verification, teleTANs.

import ENCrypto
import ENModels
import ENServiceKit
import Foundation
import Logging

/// What a phone registers with.
enum RegistrationKey: Sendable, Equatable {
    case guid(HashedGUID, dob: DOBHash?)
    case teleTAN(TeleTAN)
}

/// A test result as the app sees it.
struct AppTestResult: Sendable, Equatable {
    var testResult: Int
    /// Sample collection time, epoch seconds.
    var sc: Int64
    var labId: String?
}

/// The rules, on top of the repository and test-result-service. Secrets leave this type only as hashes (to the
/// repository: SHA-256 of registration tokens and TANs, HMAC-SHA-256 under the pepper of teleTANs) or as the hashed
/// GUID the app sent (to test-result-service).
struct VerificationEngine: Sendable {
    let repository: any VerificationRepository
    let testResults: any TestResultClient
    let policy: VerificationPolicy
    let pepper: TeleTANPepper
    let clock: WallClock
    let metrics: VerificationMetrics
    let logger: Logger

    /// The code of a positive PCR test: what teleTAN sessions (and fake polls) report.
    static let positive = LabTestResult(kind: .pcr, outcome: .positive).code

    /// A new registration token; one per GUID, per DOB hash and per teleTAN. A GUID whose result the lab protected with
    /// the date of birth registers only with the matching DOB hash, so whoever photographed the test's QR code cannot
    /// take the registration from its owner once the result is there (nor, ever, the result or a TAN).
    func register(_ key: RegistrationKey) async throws -> String {
        let keyType = if case .guid = key { "guid" } else { "teletan" }
        if case .guid(let guid, let dob) = key {
            do {
                _ = try await self.lookup(guid, dob: dob, checkDOB: false)
            } catch VerificationFailure.testResultsUnavailable {
                // Registration stays available when test-result-service is not: the result and the TAN still need
                // the date of birth, so only the lock-out this check prevents is possible meanwhile.
            }
        }
        for _ in 0..<3 {
            let token = RandomUUID.generate()
            let tokenHash = SecretHash.sha256Hex(token)
            let now = self.clock.now
            let outcome: RegistrationOutcome =
                switch key {
                case .guid(let guid, let dob):
                    try await self.repository.registerGUID(
                        tokenHash: tokenHash,
                        guid: guid,
                        dob: dob,
                        now: now,
                        dailyCap: self.policy.registrationsPerDay
                    )
                case .teleTAN(let teleTAN):
                    try await self.repository.registerTeleTAN(
                        tokenHash: tokenHash,
                        candidates: self.pepper.candidates(teleTAN),
                        now: now,
                        dailyCap: self.policy.registrationsPerDay
                    )
                }
            switch outcome {
            case .registered:
                self.metrics.recordRegistration(keyType: keyType, outcome: "created")
                return token
            case .keyUnavailable:
                self.metrics.recordRegistration(keyType: keyType, outcome: "rejected")
                if case .guid = key { throw VerificationFailure.keyAlreadyRegistered }
                throw VerificationFailure.teleTANNotRedeemable
            case .tokenCollision:
                continue
            case .dailyCapReached:
                self.metrics.recordRegistration(keyType: keyType, outcome: "capped")
                self.logger.warning("Registration refused: daily cap reached")
                let untilMidnight = RegistrationDay.end(of: now).timeIntervalSince(now)
                throw VerificationFailure.registrationsCapped(retryAfter: max(1, Int(untilMidnight.rounded(.up))))
            }
        }
        throw VerificationEngineError.randomnessExhausted
    }

    /// The result for the app's poll. teleTAN sessions are positive by definition, dated at registration.
    func result(token: String) async throws -> AppTestResult {
        let session = try await self.session(token, unknown: .unknownToken)
        switch session.source {
        case .teleTAN:
            return AppTestResult(
                testResult: Self.positive,
                sc: Int64(session.createdAt.timeIntervalSince1970.rounded(.down)),
                labId: nil
            )
        case .guid(let guid, let dob):
            return try await self.lookup(guid, dob: dob, checkDOB: self.policy.checkDOBOnExternalResult)
        }
    }

    /// The result and hashed GUID for the internal poll; the DOB check always applies, teleTAN sessions are refused.
    func internalResult(token: String) async throws -> (result: AppTestResult, hashedGUID: HashedGUID) {
        let session = try await self.session(token, unknown: .unknownSession)
        guard case .guid(let guid, let dob) = session.source else { throw VerificationFailure.teleTANSession }
        return (try await self.lookup(guid, dob: dob), guid)
    }

    /// A TAN for a session with a positive PCR or rapid test, or for a teleTAN session, within the quota.
    ///
    /// The reference checks only the GUID's result here; a session with a DOB hash is also checked for a
    /// matching DOB result (403 otherwise), so knowing a GUID without the birth date yields no TAN.
    func issueTAN(token: String) async throws -> String {
        let session = try await self.session(token, unknown: .unknownToken)
        guard session.tanCounter < self.policy.tansPerRegistrationToken else { throw VerificationFailure.tanQuotaUsed }
        var teleTANType: TeleTANType?
        switch session.source {
        case .guid(let guid, let dob):
            let result = try await self.lookup(guid, dob: dob)
            // POSITIVE (PCR; PoC-NAT arrives mapped to it) or QUICK_POSITIVE.
            guard LabTestResult(code: result.testResult)?.outcome == .positive else {
                throw VerificationFailure.resultNotPositive
            }
        case .teleTAN(let type):
            teleTANType = type
        }
        for _ in 0..<3 {
            let tan = RandomUUID.generate()
            let now = self.clock.now
            let outcome = try await self.repository.issueTAN(
                TANIssue(
                    sessionID: session.id,
                    maxPerSession: self.policy.tansPerRegistrationToken,
                    tanHash: SecretHash.sha256Hex(tan),
                    teleTANType: teleTANType,
                    now: now,
                    validUntil: now.addingTimeInterval(self.policy.tanValidity.timeInterval)
                )
            )
            switch outcome {
            case .issued:
                self.metrics.recordTANIssued(source: teleTANType == nil ? "connected_lab" : "teletan")
                return tan
            case .quotaUsed: throw VerificationFailure.tanQuotaUsed
            case .sessionGone: throw VerificationFailure.unknownToken
            case .collision: continue
            }
        }
        throw VerificationEngineError.randomnessExhausted
    }

    /// Consumes a TAN that meets `requirement`; returns the teleTAN type it derives from, if any. A TAN of the other
    /// kind stays usable.
    func verifyTAN(
        _ tan: String,
        requiring requirement: TANRequirement = .any,
        submission: UUID? = nil
    ) async throws -> TeleTANType? {
        let consumption = try await self.repository.consumeTAN(
            hash: SecretHash.sha256Hex(tan),
            now: self.clock.now,
            requiring: requirement,
            submission: submission
        )
        switch consumption {
        case .consumed(let type):
            self.metrics.recordTANVerification(outcome: "verified")
            return type
        case .wrongKind:
            self.metrics.recordTANVerification(outcome: "wrong_kind")
            throw VerificationFailure.tanOfOtherKind
        case .unavailable:
            self.metrics.recordTANVerification(outcome: "rejected")
            throw VerificationFailure.tanNotRedeemable
        case .redeemed(let by):
            self.metrics.recordTANVerification(outcome: "rejected")
            // A caller that names no attempt gets the reference's answer for a used TAN.
            guard submission != nil else { throw VerificationFailure.tanNotRedeemable }
            throw VerificationFailure.tanRedeemed(by: by)
        }
    }

    /// Whether, and by which submission attempt, the TAN whose SHA-256 is `hash` was spent; `nil` when no TAN has it.
    func tanRedemption(hash: String) async throws -> TANRedemption? {
        try await self.repository.tanRedemption(hash: hash)
    }

    /// A new teleTAN of `type`, within the global rate limit.
    func createTeleTAN(type: TeleTANType, bearer: JWTVerifier.Claims? = nil) async throws -> TeleTAN {
        let spent = bearer.map {
            SpentBearerToken(hash: SecretHash.sha256Hex("\($0.issuer)\u{0}\($0.tokenID)"), expiresAt: $0.expiresAt)
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5 {
            let teleTAN = TeleTAN.generate(using: &generator)
            let now = self.clock.now
            let outcome = try await self.repository.createTeleTAN(
                TeleTANRequest(
                    digest: self.pepper.digest(teleTAN),
                    candidates: self.pepper.candidates(teleTAN),
                    type: type,
                    now: now,
                    validUntil: now.addingTimeInterval(self.policy.teleTANValidity(type).timeInterval),
                    limit: self.policy.teleTANRateLimit,
                    windowStart: now.addingTimeInterval(-self.policy.teleTANRateWindow.timeInterval),
                    lockTimeout: self.policy.teleTANLockTimeout,
                    bearer: spent
                )
            )
            switch outcome {
            case .created(let inWindow):
                if inWindow * 5 >= self.policy.teleTANRateLimit * 4 {
                    self.logger.warning(
                        "teleTAN creation is at 80 % of its rate limit or more",
                        metadata: [
                            "teletan.in_window": "\(inWindow)", "teletan.limit": "\(self.policy.teleTANRateLimit)",
                        ]
                    )
                }
                return teleTAN
            case .rateLimited:
                throw VerificationFailure.rateLimited
            case .busy:
                throw VerificationFailure.busy
            case .replayed:
                throw VerificationFailure.unauthorized(JWTError.replayed.description)
            case .collision:
                continue
            }
        }
        throw VerificationEngineError.randomnessExhausted
    }

    // MARK: - Helpers

    private func session(_ token: String, unknown: VerificationFailure) async throws -> AppSession {
        guard let session = try await self.repository.session(tokenHash: SecretHash.sha256Hex(token)) else {
            throw unknown
        }
        return session
    }

    /// Asks test-result-service for the GUID's result and, when there is a DOB hash, for that one too (at the
    /// same time); different results mean the birth date was wrong (403).
    ///
    /// A result the lab protected with the date of birth (`dobProtected`, our extension) always needs the DOB hash and
    /// a matching DOB result, whatever `checkDOB` says; without the mark, the DOB result is compared when `checkDOB`
    /// and a DOB hash is known, as in the reference.
    private func lookup(_ guid: HashedGUID, dob: DOBHash?, checkDOB: Bool = true) async throws -> AppTestResult {
        do {
            guard let dob else {
                let byGUID = try await self.testResults.result(for: guid.value)
                guard byGUID.dobProtected != true else { throw VerificationFailure.dobRequired }
                return Self.view(byGUID)
            }
            async let guidResult = self.testResults.result(for: guid.value)
            async let dobResult = self.testResults.result(for: dob.value)
            let (byGUID, byDOB) = try await (guidResult, dobResult)
            if checkDOB || byGUID.dobProtected == true {
                guard byGUID.testResult == byDOB.testResult else { throw VerificationFailure.dobMismatch }
            }
            return Self.view(byGUID)
        } catch is UpstreamUnavailable {
            self.metrics.recordUpstreamFailure()
            throw VerificationFailure.testResultsUnavailable
        }
    }

    private static func view(_ result: ReportedTestResult) -> AppTestResult {
        AppTestResult(testResult: result.testResult, sc: result.sc ?? 0, labId: result.labId)
    }
}

enum VerificationEngineError: Error {
    /// Random tokens collided with stored ones several times in a row; the generator is broken.
    case randomnessExhausted
}
