// Isolation payment tokens (nhs §8), kept as their SHA-256 (256 random bits need no pepper): `created` when an
// isolation starts, `valid` once the app unlocks it with the isolation's dates, gone once the website consumes it.

import Foundation

/// A token's claim as the website sees it.
struct NHSIsolationClaim: Sendable, Equatable {
    var riskyEncounterDate: Date
    var isolationPeriodEndDate: Date
    var createdAt: Date
    var updatedAt: Date
}

/// Every transition is one conditional step, so a token is unlocked once and consumed once, also in parallel.
protocol NHSIsolationPaymentRepository: Sendable {
    /// A new token in state `created`; `false` when its hash exists (a 256-bit collision: never in practice).
    func create(tokenHash: String, now: Date, expiresAt: Date) async throws -> Bool

    /// `created` → `valid` with the isolation's dates; the token then lives until the isolation ends. `false` for an
    /// unknown, expired or already valid token.
    func unlock(tokenHash: String, encounter: Date, isolationEnd: Date, now: Date) async throws -> Bool

    /// The claim of a `valid`, unexpired token, stamped as verified; `nil` otherwise.
    func verify(tokenHash: String, now: Date) async throws -> NHSIsolationClaim?

    /// Deletes a `valid`, unexpired token and returns its claim; `nil` for every other token, so one of any number of
    /// parallel consumptions succeeds.
    func consume(tokenHash: String, now: Date) async throws -> NHSIsolationClaim?

    /// Deletes expired tokens; returns how many.
    func deleteExpired(now: Date) async throws -> Int
}
