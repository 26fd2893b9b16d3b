// What an officer's roles allow (cwa-satellites §3.1).

/// The roles the portal knows; others may be stored but allow nothing here.
enum PortalRole: String, CaseIterable, Sendable {
    /// Hotline staff: TEST teleTANs (a positive PCR test).
    case hotline = "c19hotline"
    /// Health-authority staff: EVENT teleTANs (warning the guests of an event), for a chosen authority.
    case hotlineEvent = "c19hotline_event"
    /// NHS public-health staff: the circuit breakers of exposure and venue alerts (nhs §7).
    case circuitBreakerOfficer = "circuit_breaker_officer"
    /// NHS public-health staff: the lists of risky venues and risky post districts (nhs §5, §6).
    case venueOfficer = "venue_officer"
}

/// The two teleTAN types, as verification-service's `X-CWA-TELETAN-TYPE` names them.
enum TeleTANKind: String, Sendable {
    case test = "TEST"
    case event = "EVENT"

    var requiredRole: PortalRole {
        switch self {
        case .test: .hotline
        case .event: .hotlineEvent
        }
    }
}
