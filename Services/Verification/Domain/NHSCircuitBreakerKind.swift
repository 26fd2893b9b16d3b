// What a circuit-breaker request asks about and what it is answered (nhs §7).

/// The two kinds of approval, as they appear in the paths.
enum NHSCircuitBreakerKind: String, Sendable, CaseIterable, Codable {
    case exposureNotification = "exposure-notification"
    case venue
}

/// An approval: `yes` (alert), `no` (stay silent), `pending` (ask again later).
enum NHSApproval: String, Sendable, CaseIterable, Codable {
    case yes, no, pending
}
