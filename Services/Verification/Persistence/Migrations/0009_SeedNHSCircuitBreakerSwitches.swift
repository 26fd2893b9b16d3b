// Migration 0009 of group `verification`: a switch row per circuit-breaker kind (nhs §7).

import ENPersistence

/// Every kind has its switch row from the start (`yes`, the reference's default), so a request holds it shared
/// while it is decided and an officer's resolution holds it exclusively.
struct SeedNHSCircuitBreakerSwitches: DatabaseMigration {
    let name = "0009_seed_nhs_circuit_breaker_switches"
    let statements = [
        """
        INSERT INTO nhs_circuit_breaker_switch (kind, mode, changed_at)
        VALUES ('exposure-notification', 'yes', now()), ('venue', 'yes', now())
        ON CONFLICT (kind) DO NOTHING
        """
    ]
}
