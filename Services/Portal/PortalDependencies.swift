// What portal-service needs from the outside world, as replaceable values.

import ENNHS
import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service's dependencies. `live` connects to PostgreSQL and verification-service; tests use `postgres(…)` with
/// a test database or `inMemory()` for route tests.
struct PortalDependencies: ServiceDependencies {
    var repository: any PortalRepository
    var teleTANs: any TeleTANClient
    /// The NHS circuit breakers at verification-service (nhs §7).
    var circuitBreakers: any CircuitBreakerClient
    var clock: WallClock
    /// Long-lived clients to run before the server (the database pool, the HTTP client).
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]
    /// The NHS lists' publication at distribution-service, and the NHS API keys of the uploads.
    var lists: any NHSListClient = InMemoryNHSListClient()
    var apiKeys: NHSAPIKeyVerifier? = nil

    static func live(configuration: PortalConfiguration, logger: Logger) -> PortalDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let readiness = configuration.database.makeReadinessClient(logger: logger)
        let teleTANs = HTTPTeleTANClient(
            baseURL: configuration.verificationURL,
            policy: configuration.upstream,
            serviceToken: configuration.serviceToken,
            logger: logger
        )
        var dependencies = self.postgres(
            client: client,
            teleTANs: teleTANs,
            logger: logger,
            readiness: readiness,
            leaseTimeout: configuration.database.leaseTimeout
        )
        dependencies.circuitBreakers = teleTANs
        dependencies.services = [client, readiness, teleTANs]
        if configuration.nhsEnabled {
            let lists = HTTPNHSListClient(
                baseURL: configuration.distributionURL,
                policy: configuration.upstream,
                serviceToken: configuration.serviceToken,
                logger: logger
            )
            dependencies.lists = lists
            dependencies.services.append(lists)
        }
        return dependencies
    }

    /// A repository on a client someone else runs (the test support does), issuing teleTANs through `teleTANs`.
    /// `/health/ready` asks `readiness` (a client of its own in `live`), else `client`; requests wait at most
    /// `leaseTimeout` for a pooled connection (`live` passes `DATABASE_LEASE_TIMEOUT`).
    static func postgres(
        client: PostgresClient,
        teleTANs: any TeleTANClient,
        circuitBreakers: any CircuitBreakerClient = InMemoryCircuitBreakerClient(),
        logger: Logger,
        clock: WallClock = .system,
        readiness: PostgresClient? = nil,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) -> PortalDependencies {
        PortalDependencies(
            repository: PostgresPortalRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            teleTANs: teleTANs,
            circuitBreakers: circuitBreakers,
            clock: clock,
            services: [],
            readinessChecks: [PostgresReadinessCheck(client: readiness ?? client)],
            apiKeys: NHSAPIKeyVerifier(
                store: PostgresNHSAPIKeyStore(client: client, logger: logger, leaseTimeout: leaseTimeout)
            )
        )
    }

    /// Everything in memory: the repository, and verification-service as a recording stand-in.
    static func inMemory(
        teleTANs: any TeleTANClient = InMemoryTeleTANClient(),
        circuitBreakers: any CircuitBreakerClient = InMemoryCircuitBreakerClient(),
        clock: WallClock = .system
    ) -> PortalDependencies {
        PortalDependencies(
            repository: InMemoryPortalRepository(),
            teleTANs: teleTANs,
            circuitBreakers: circuitBreakers,
            clock: clock,
            services: [],
            readinessChecks: []
        )
    }
}
