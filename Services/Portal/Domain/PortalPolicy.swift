// The portal's limits, each a setting.

import ENServiceKit
import Foundation

/// Lockout, session lifetimes and the per-officer teleTAN interval.
struct PortalPolicy: Sendable, Equatable {
    /// Failed logins (password or second factor) that lock an account.
    var maxFailedLogins = 5
    var lockDuration: Duration = .seconds(15 * 60)
    /// An authenticated session ends this long after login, however active.
    var sessionLifetime: Duration = .seconds(4 * 3600)
    /// … and after this long without a request.
    var sessionIdleTimeout: Duration = .seconds(30 * 60)
    /// Between password and second factor, at most this long.
    var secondFactorTimeout: Duration = .seconds(5 * 60)
    /// One teleTAN per officer per this interval (cwa-satellites §3.2), across replicas.
    var teleTANInterval: Duration = .seconds(30)
    /// bcrypt cost of stored passwords.
    var bcryptCost = 12

    init() {}

    init(settings: SettingsReader) {
        let defaults = PortalPolicy()
        self.maxFailedLogins = settings.int(
            "LOGIN_MAX_FAILURES",
            default: defaults.maxFailedLogins,
            range: 1...100,
            help: "Failed logins that lock an account."
        )
        self.lockDuration = settings.duration(
            "LOGIN_LOCK_DURATION",
            default: defaults.lockDuration,
            help: "How long a locked account stays locked."
        )
        self.sessionLifetime = settings.duration(
            "SESSION_LIFETIME",
            default: defaults.sessionLifetime,
            help: "Absolute session limit after login."
        )
        self.sessionIdleTimeout = settings.duration(
            "SESSION_IDLE_TIMEOUT",
            default: defaults.sessionIdleTimeout,
            help: "Idle session limit."
        )
        self.teleTANInterval = settings.duration(
            "TELETAN_USER_INTERVAL",
            default: defaults.teleTANInterval,
            help: "Least time between two teleTANs of one officer."
        )
        self.bcryptCost = settings.int(
            "BCRYPT_COST",
            default: defaults.bcryptCost,
            range: 4...16,
            help: "bcrypt cost of new password hashes."
        )
    }
}
