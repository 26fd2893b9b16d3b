// What the portal asks verification-service.

import ENServiceKit

/// What verification-service answered.
enum TeleTANAnswer: Sendable, Equatable {
    case created(String)
    /// The global limit of verification-service (429).
    case rateLimited
    /// Refused the token (401/403) or the request: a configuration fault between the two services.
    case refused(Int)
}

/// Asks verification-service for a teleTAN, with the portal's bearer token for the officer.
protocol TeleTANClient: Sendable {
    /// A teleTAN of `kind`; throws when verification-service cannot answer.
    func createTeleTAN(kind: TeleTANKind, bearer: String) async throws(UpstreamUnavailable) -> TeleTANAnswer
}
