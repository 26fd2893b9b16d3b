// Storage of sessions, TANs and teleTANs, independent of the database behind it.

import Foundation

/// Where verification's state lives. Only hashes of secrets reach it. Every method is atomic with respect to
/// concurrent calls, so that the rules that must hold under concurrency (one token per key, the TAN quota,
/// single-use TANs and teleTANs, the teleTAN rate limit) hold with any number of replicas.
protocol VerificationRepository: Sendable {
    /// A session for a hashed GUID (and DOB hash); each hash is registrable once, in either role (§1.4). At most
    /// `dailyCap` sessions (of both kinds) are created per UTC day; beyond that, `.dailyCapReached`.
    func registerGUID(
        tokenHash: String,
        guid: HashedGUID,
        dob: DOBHash?,
        now: Date,
        dailyCap: Int
    ) async throws -> RegistrationOutcome

    /// A session for a teleTAN, which is redeemed by it; only an unredeemed, unexpired teleTAN qualifies. `candidates`
    /// are the forms the teleTAN may be stored in (`TeleTANPepper.candidates`); a row matches one when both its hash and
    /// its key id do. The daily cap applies as for GUIDs.
    func registerTeleTAN(
        tokenHash: String,
        candidates: [TeleTANDigest],
        now: Date,
        dailyCap: Int
    ) async throws -> RegistrationOutcome

    /// The session of a registration token's hash.
    func session(tokenHash: String) async throws -> AppSession?

    /// Counts a TAN against the session's quota and stores its hash, together or not at all.
    func issueTAN(_ issue: TANIssue) async throws -> TANIssueOutcome

    /// Consumes a TAN that exists, is inside its validity window, was not consumed and meets `requirement`, recording
    /// `submission` as the attempt that spent it; of concurrent calls exactly one succeeds. A TAN the same `submission`
    /// spent before is answered `.consumed` again (the attempt repeats a call whose answer it lost); one another
    /// attempt spent is `.redeemed(by:)`.
    func consumeTAN(
        hash: String,
        now: Date,
        requiring requirement: TANRequirement,
        submission: UUID?
    ) async throws -> TANConsumption

    /// Whether, and by which submission attempt, the TAN with `hash` was used; `nil` when no TAN has that hash (any
    /// more: a spent TAN's record is kept for the redemption retention).
    func tanRedemption(hash: String) async throws -> TANRedemption?

    /// Creates a teleTAN unless the request's limit is reached; creations are serialised, and one that waits longer
    /// than its `lockTimeout` for its turn gives up (`.busy`).
    func createTeleTAN(_ request: TeleTANRequest) async throws -> TeleTANCreation

    /// Deletes sessions (and their registered keys), TANs and the daily registration counts from before `cutoff`, TANs that expired or were
    /// consumed, and teleTANs that expired and no longer count for the rate limit. `nil` when another replica is
    /// running retention.
    ///
    /// A consumed TAN is kept until `redemptionCutoff` passed its consumption, so its redemption can still be looked up.
    func applyRetention(
        cutoff: Date,
        now: Date,
        rateWindowStart: Date,
        redemptionCutoff: Date
    ) async throws -> VerificationRetentionOutcome?
}

extension VerificationRepository {
    /// `registerGUID` without a daily cap.
    func registerGUID(tokenHash: String, guid: HashedGUID, dob: DOBHash?, now: Date) async throws -> RegistrationOutcome
    {
        try await self.registerGUID(tokenHash: tokenHash, guid: guid, dob: dob, now: now, dailyCap: .max)
    }

    /// `registerTeleTAN` without a daily cap.
    func registerTeleTAN(tokenHash: String, candidates: [TeleTANDigest], now: Date) async throws -> RegistrationOutcome
    {
        try await self.registerTeleTAN(tokenHash: tokenHash, candidates: candidates, now: now, dailyCap: .max)
    }

    /// `consumeTAN` for a caller that names no submission attempt.
    func consumeTAN(hash: String, now: Date, requiring requirement: TANRequirement) async throws -> TANConsumption {
        try await self.consumeTAN(hash: hash, now: now, requiring: requirement, submission: nil)
    }

    /// Consumes a TAN of any kind; whether it was consumed, and the teleTAN type it derives from.
    func consumeTAN(hash: String, now: Date) async throws -> (consumed: Bool, teleTANType: TeleTANType?) {
        if case .consumed(let type) = try await self.consumeTAN(hash: hash, now: now, requiring: .any) {
            return (true, type)
        }
        return (false, nil)
    }
}

enum VerificationRepositoryError: Error {
    /// A row violates what the schema's checks guarantee.
    case invalidRow
}
