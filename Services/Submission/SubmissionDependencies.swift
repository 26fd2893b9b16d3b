// What submission-service needs from the outside world, as replaceable values.

import ENKeyStore
import ENNHS
import ENPersistence
import ENServiceKit
import Logging
import PostgresNIO
import ServiceLifecycle

/// The service's dependencies. `live` connects to PostgreSQL, verification-service and data-donation-service; tests
/// use `postgres(…)` with a test database (and call `shutdown()` at the end) or `inMemory()` for route tests.
///
/// Neither peer is a readiness check: a replica that cannot reach one still stores what the other authorises, and
/// answers 503 for the rest.
struct SubmissionDependencies: ServiceDependencies {
    var keys: any DiagnosisKeyRepository
    var verifier: any VerificationClient
    /// Redeems self-report OTPs (data-donation-service).
    var selfReports: any SelfReportClient
    var clock: WallClock
    /// Long-lived clients to run before the server (the database pool, the HTTP client).
    var services: [any Service]
    var readinessChecks: [any ReadinessCheck]
    /// Shuts down what the application does not run as a service (the HTTP client in tests).
    var shutdown: @Sendable () async throws -> Void
    /// Checks the NHS API keys of the NHS routes (`nhs_api_key` in the `keys` database; in memory in route tests).
    var apiKeys: NHSAPIKeyVerifier

    static func live(configuration: SubmissionConfiguration, logger: Logger) -> SubmissionDependencies {
        let client = configuration.database.makeClient(logger: logger)
        let readiness = configuration.database.makeReadinessClient(logger: logger)
        let verification = HTTPVerificationClient(
            baseURL: configuration.verificationURL,
            policy: configuration.upstream,
            serviceToken: configuration.serviceToken,
            logger: logger
        )
        let selfReports = HTTPSelfReportClient(
            baseURL: configuration.dataDonationURL,
            policy: configuration.dataDonationUpstream,
            serviceToken: configuration.serviceToken,
            logger: logger
        )
        var dependencies = self.postgres(
            client: client,
            verification: verification,
            selfReports: selfReports,
            logger: logger,
            readiness: readiness,
            leaseTimeout: configuration.database.leaseTimeout
        )
        dependencies.services = [client, readiness, verification, selfReports]
        return dependencies
    }

    /// The key store on a client someone else runs (the test support does), verifying TANs with `verification` and
    /// redeeming OTPs with `selfReports` (without one, an in-memory stand-in that knows no OTP: every self-report gets
    /// 403). `/health/ready` asks `readiness` (a client of its own in `live`), else `client`; requests wait at most
    /// `leaseTimeout` for a pooled connection (`live` passes `DATABASE_LEASE_TIMEOUT`).
    static func postgres(
        client: PostgresClient,
        verification: HTTPVerificationClient,
        selfReports: HTTPSelfReportClient? = nil,
        logger: Logger,
        clock: WallClock = .system,
        readiness: PostgresClient? = nil,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) -> SubmissionDependencies {
        SubmissionDependencies(
            keys: PostgresDiagnosisKeyRepository(client: client, logger: logger, leaseTimeout: leaseTimeout),
            verifier: verification,
            selfReports: selfReports ?? InMemorySelfReportClient(),
            clock: clock,
            services: [],
            readinessChecks: [PostgresReadinessCheck(client: readiness ?? client)],
            shutdown: {
                try await verification.shutdown()
                try await selfReports?.shutdown()
            },
            apiKeys: NHSAPIKeyVerifier(
                store: PostgresNHSAPIKeyStore(client: client, logger: logger, leaseTimeout: leaseTimeout)
            )
        )
    }

    /// Everything in memory: the key store, verification-service as the TANs the test issues and
    /// data-donation-service as the OTPs it issues.
    static func inMemory(
        verifier: any VerificationClient = InMemoryVerificationClient(),
        selfReports: any SelfReportClient = InMemorySelfReportClient(),
        keys: any DiagnosisKeyRepository = InMemoryDiagnosisKeyRepository(),
        clock: WallClock = .system
    ) -> SubmissionDependencies {
        SubmissionDependencies(
            keys: keys,
            verifier: verifier,
            selfReports: selfReports,
            clock: clock,
            services: [],
            readinessChecks: [],
            shutdown: {},
            apiKeys: NHSAPIKeyVerifier(store: InMemoryNHSAPIKeyStore())
        )
    }
}
