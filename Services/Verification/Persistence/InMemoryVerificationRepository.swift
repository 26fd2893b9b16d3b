// Sessions, TANs and teleTANs in memory, for route tests and runs without PostgreSQL.

import ENCrypto
import Foundation

/// The rules of the PostgreSQL repository over dictionaries; the actor makes every method atomic.
actor InMemoryVerificationRepository: VerificationRepository {
    private struct Session {
        var id: Int64
        var source: AppSession.Source
        var tanCounter: Int
        var createdAt: Date
    }

    private struct TAN {
        var teleTANType: TeleTANType?
        var createdAt: Date
        var validFrom: Date
        var validUntil: Date
        var consumed: Bool
        var consumedAt: Date? = nil
        var redeemedBy: UUID? = nil
    }

    private struct StoredTeleTAN {
        var digest: TeleTANDigest
        var type: TeleTANType
        var createdAt: Date
        var validUntil: Date
        var redeemed: Bool
    }

    private var sessions: [String: Session] = [:]
    /// GUID and DOB hashes, with the id of the session that registered them.
    private var registeredKeys: [String: Int64] = [:]
    private var tans: [String: TAN] = [:]
    /// By hash, as `tele_tan_hash` is unique.
    private var teleTANs: [String: StoredTeleTAN] = [:]
    private var lastID: Int64 = 0
    /// Sessions created per UTC day (the day's start).
    private var registrationDays: [Date: Int] = [:]
    /// Bearer tokens that created a teleTAN, by hash, with their expiry.
    private var spentBearers: [String: Date] = [:]

    init() {}

    func registerGUID(
        tokenHash: String,
        guid: HashedGUID,
        dob: DOBHash?,
        now: Date,
        dailyCap: Int
    ) -> RegistrationOutcome {
        guard self.sessions[tokenHash] == nil else { return .tokenCollision }
        let keys = [guid.value] + (dob.map { [$0.value] } ?? [])
        guard Set(keys).count == keys.count, keys.allSatisfy({ self.registeredKeys[$0] == nil }) else {
            return .keyUnavailable
        }
        guard self.countRegistration(now: now, dailyCap: dailyCap) else { return .dailyCapReached }
        let id = self.insertSession(tokenHash: tokenHash, source: .guid(guid, dob: dob), now: now)
        for key in keys { self.registeredKeys[key] = id }
        return .registered
    }

    func registerTeleTAN(
        tokenHash: String,
        candidates: [TeleTANDigest],
        now: Date,
        dailyCap: Int
    ) -> RegistrationOutcome {
        guard let hash = self.storedHash(matching: candidates), let teleTAN = self.teleTANs[hash], !teleTAN.redeemed,
            teleTAN.validUntil > now
        else {
            return .keyUnavailable
        }
        guard self.sessions[tokenHash] == nil else { return .tokenCollision }
        guard self.countRegistration(now: now, dailyCap: dailyCap) else { return .dailyCapReached }
        self.teleTANs[hash]?.redeemed = true
        _ = self.insertSession(tokenHash: tokenHash, source: .teleTAN(teleTAN.type), now: now)
        return .registered
    }

    func session(tokenHash: String) -> AppSession? {
        self.sessions[tokenHash].map {
            AppSession(id: $0.id, source: $0.source, tanCounter: $0.tanCounter, createdAt: $0.createdAt)
        }
    }

    func issueTAN(_ issue: TANIssue) -> TANIssueOutcome {
        guard let token = self.sessions.first(where: { $0.value.id == issue.sessionID })?.key else {
            return .sessionGone
        }
        guard self.sessions[token]!.tanCounter < issue.maxPerSession else { return .quotaUsed }
        guard self.tans[issue.tanHash] == nil else { return .collision }
        self.sessions[token]!.tanCounter += 1
        self.tans[issue.tanHash] = TAN(
            teleTANType: issue.teleTANType,
            createdAt: issue.now,
            validFrom: issue.now,
            validUntil: issue.validUntil,
            consumed: false
        )
        return .issued
    }

    func consumeTAN(
        hash: String,
        now: Date,
        requiring requirement: TANRequirement,
        submission: UUID?
    ) -> TANConsumption {
        guard let tan = self.tans[hash] else { return .unavailable }
        if tan.consumed {
            if let submission, tan.redeemedBy == submission, requirement.admits(tan.teleTANType) {
                return .consumed(tan.teleTANType)
            }
            return .redeemed(by: tan.redeemedBy)
        }
        guard tan.validFrom <= now, tan.validUntil > now else { return .unavailable }
        guard requirement.admits(tan.teleTANType) else { return .wrongKind }
        self.tans[hash]?.consumed = true
        self.tans[hash]?.consumedAt = now
        self.tans[hash]?.redeemedBy = submission
        return .consumed(tan.teleTANType)
    }

    func tanRedemption(hash: String) -> TANRedemption? {
        guard let tan = self.tans[hash] else { return nil }
        return tan.consumed ? .redeemed(by: tan.redeemedBy) : .unused
    }

    func createTeleTAN(_ request: TeleTANRequest) -> TeleTANCreation {
        let recent = self.teleTANs.values.count { $0.createdAt > request.windowStart }
        guard recent < request.limit else { return .rateLimited }
        guard self.teleTANs[request.digest.hash] == nil, self.storedHash(matching: request.candidates) == nil else {
            return .collision
        }
        if let bearer = request.bearer {
            guard self.spentBearers[bearer.hash] == nil else { return .replayed }
            self.spentBearers[bearer.hash] = bearer.expiresAt
        }
        self.teleTANs[request.digest.hash] = StoredTeleTAN(
            digest: request.digest,
            type: request.type,
            createdAt: request.now,
            validUntil: request.validUntil,
            redeemed: false
        )
        return .created(inWindow: recent + 1)
    }

    func applyRetention(
        cutoff: Date,
        now: Date,
        rateWindowStart: Date,
        redemptionCutoff: Date
    ) -> VerificationRetentionOutcome? {
        var outcome = VerificationRetentionOutcome()
        let expired = self.sessions.filter { $0.value.createdAt < cutoff }
        let expiredIDs = Set(expired.values.map(\.id))
        for token in expired.keys { self.sessions[token] = nil }
        self.registeredKeys = self.registeredKeys.filter { !expiredIDs.contains($0.value) }
        outcome.sessions = expired.count
        let tansBefore = self.tans.count
        self.tans = self.tans.filter { entry in
            let tan = entry.value
            guard tan.createdAt >= cutoff else { return false }
            if let consumedAt = tan.consumedAt { return consumedAt >= redemptionCutoff }
            return tan.validUntil > now
        }
        outcome.tans = tansBefore - self.tans.count
        let teleTANsBefore = self.teleTANs.count
        self.teleTANs = self.teleTANs.filter { $0.value.validUntil > now || $0.value.createdAt > rateWindowStart }
        outcome.teleTANs = teleTANsBefore - self.teleTANs.count
        self.spentBearers = self.spentBearers.filter { $0.value > now }
        self.registrationDays = self.registrationDays.filter { $0.key >= RegistrationDay.start(of: cutoff) }
        return outcome
    }

    /// Counts one registration on `now`'s UTC day, unless the day has `dailyCap` already.
    private func countRegistration(now: Date, dailyCap: Int) -> Bool {
        let day = RegistrationDay.start(of: now)
        let created = self.registrationDays[day, default: 0]
        guard created < dailyCap else { return false }
        self.registrationDays[day] = created + 1
        return true
    }

    /// The hash of the stored teleTAN that one of `candidates` names (hash and key id), compared in constant time with
    /// every stored hash.
    private func storedHash(matching candidates: [TeleTANDigest]) -> String? {
        var found: String?
        for stored in self.teleTANs.values {
            for candidate in candidates where candidate.keyID == stored.digest.keyID {
                if ConstantTime.equals(candidate.hash, stored.digest.hash) { found = stored.digest.hash }
            }
        }
        return found
    }

    private func insertSession(tokenHash: String, source: AppSession.Source, now: Date) -> Int64 {
        self.lastID += 1
        self.sessions[tokenHash] = Session(id: self.lastID, source: source, tanCounter: 0, createdAt: now)
        return self.lastID
    }
}
