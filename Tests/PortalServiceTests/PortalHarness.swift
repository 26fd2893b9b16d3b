// Building portal-service for tests: a configuration with a key file, an engine on the test database with a manual
// clock and the in-memory stand-in for verification-service, and officers created straight in the repository.

import Crypto
import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import Metrics
import MetricsTestKit
import NIOCore
import PostgresNIO
import Testing

@testable import PortalService

/// portal-service on the test database: its configuration (with a key file in a temporary folder), an engine with a
/// manual clock, and the router the service serves, with every log line kept.
struct PortalHarness: Sendable {
    typealias App = ServiceApplication<PortalRequestContext>

    /// The password of officers made by `addOfficer`.
    static let password = "correct-Horse-battery-9"
    static let start = Date(timeIntervalSince1970: 1_700_000_000)
    /// The teleTAN the stand-in for verification-service hands out; tests look for it where it must never appear.
    static let teleTAN = "R7KQ2MXP9T"

    let database: PostgresTestDatabase
    let clock: ManualClock
    let issuer: InMemoryTeleTANClient
    /// The stand-in for verification-service's circuit-breaker routes.
    let circuitBreakers: InMemoryCircuitBreakerClient
    /// The stand-in for distribution-service's publication of the NHS lists.
    let lists: InMemoryNHSListClient
    let configuration: PortalConfiguration
    let engine: PortalEngine
    let app: App
    let logs: InMemoryLogHandler
    let logger: Logger
    /// What the engine counted (`en_portal_*`).
    let metrics: TestMetrics

    var repository: any PortalRepository { self.engine.repository }

    /// Runs `body` with a harness. `overrides` are settings on top of the test defaults; `key` is the portal's
    /// signing key; with `realVerification` the engine calls `VERIFICATION_INTERNAL_URL` with the real client
    /// instead of the fake.
    static func run(
        _ overrides: [String: String] = [:],
        key: P256.Signing.PrivateKey = P256.Signing.PrivateKey(),
        clock: ManualClock = ManualClock(PortalHarness.start),
        realVerification: Bool = false,
        _ body: @Sendable (PortalHarness) async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("portal-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try await withCleanup {
            let keyFile = folder.appendingPathComponent("portal-jwt.pem")
            try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            let configuration = try Self.configuration(database: database, keyFile: keyFile.path, overrides: overrides)

            let logs = InMemoryLogHandler()
            var logger = Logger(label: "portal-test", factory: { _ in logs })
            logger.logLevel = .trace
            let issuer = InMemoryTeleTANClient(behaviour: .answer(.created(Self.teleTAN)))
            let upstream =
                realVerification
                ? HTTPTeleTANClient(
                    baseURL: configuration.verificationURL,
                    policy: configuration.upstream,
                    serviceToken: configuration.serviceToken,
                    logger: logger
                )
                : nil
            let teleTANs: any TeleTANClient = upstream ?? issuer
            let metrics = TestMetrics()
            let engine = Self.engine(
                configuration: configuration,
                client: database.client,
                teleTANs: teleTANs,
                clock: clock,
                logger: logger,
                metrics: metrics
            )
            let circuitBreakers = InMemoryCircuitBreakerClient()
            let lists = InMemoryNHSListClient()
            let harness = PortalHarness(
                database: database,
                clock: clock,
                issuer: issuer,
                circuitBreakers: circuitBreakers,
                lists: lists,
                configuration: configuration,
                engine: engine,
                app: try await Self.app(
                    configuration: configuration,
                    engine: engine,
                    client: database.client,
                    circuitBreakers: circuitBreakers,
                    lists: lists,
                    logger: logger
                ),
                logs: logs,
                logger: logger,
                metrics: metrics
            )
            try await withCleanup {
                try await body(harness)
            } cleanup: {
                try await upstream?.shutdown()
            }
        } cleanup: {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// The test defaults: this test's database, the key file, bcrypt cost 4, and the Host values `portal.test` and
    /// `localhost` (the authority HummingbirdTesting's router client always sends).
    static func configuration(
        database: PostgresTestDatabase,
        keyFile: String,
        overrides: [String: String]
    ) throws -> PortalConfiguration {
        var values = [
            "DATABASE_URL": database.processEnvironment["DATABASE_URL"] ?? "",
            "HTTP_PORT": "0",
            "METRICS_PORT": "0",
            "PORTAL_JWT_KEY_FILE": keyFile,
            "TOTP_KEY_FILE": TestKeyFiles.standard,
            "SERVICE_TOKEN_KEY_FILE": TestServiceKeys.privateKeyFile("portal-service"),
            "BCRYPT_COST": "4",
            "PORTAL_ALLOWED_HOSTS": "portal.test,localhost",
        ]
        values.merge(overrides) { _, new in new }
        return try PortalConfiguration.load(from: SettingsReader(values: values))
    }

    static func engine(
        configuration: PortalConfiguration,
        client: PostgresClient,
        teleTANs: any TeleTANClient,
        clock: ManualClock,
        logger: Logger,
        metrics: any MetricsFactory
    ) -> PortalEngine {
        Portal.engine(
            configuration: configuration,
            dependencies: .postgres(client: client, teleTANs: teleTANs, logger: logger, clock: clock.wallClock),
            logger: logger,
            metrics: metrics
        )
    }

    /// The service's router in an application bound to port 0 (for `.router` tests and `LiveServer`).
    static func app(
        configuration: PortalConfiguration,
        engine: PortalEngine,
        client: PostgresClient,
        circuitBreakers: any CircuitBreakerClient = InMemoryCircuitBreakerClient(),
        lists: any NHSListClient = InMemoryNHSListClient(),
        logger: Logger
    ) async throws -> App {
        var dependencies = PortalDependencies.postgres(
            client: client,
            teleTANs: engine.teleTANs,
            circuitBreakers: circuitBreakers,
            logger: logger
        )
        dependencies.lists = lists
        dependencies.apiKeys = NHSAPIKeyVerifier(store: TestNHS.keyStore())
        let router = try await Portal.buildRouter(
            configuration: configuration,
            engine: engine,
            dependencies: dependencies,
            environment: .testing(logger: logger)
        )
        return Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: logger
        )
    }

    /// Runs `body` with another portal replica on the same database: its own connection pool, engine and router, the
    /// same clock and fake verification-service.
    func withReplica<T: Sendable>(_ body: (App) async throws -> T) async throws -> T {
        let pool = self.database.configuration.makeClient(logger: self.logger)
        let poolTask = Task { await pool.run() }
        defer { poolTask.cancel() }
        let engine = Self.engine(
            configuration: self.configuration,
            client: pool,
            teleTANs: self.issuer,
            clock: self.clock,
            logger: self.logger,
            metrics: self.metrics
        )
        return try await body(
            try await Self.app(configuration: self.configuration, engine: engine, client: pool, logger: self.logger)
        )
    }

    // MARK: - Officers and the audit trail

    /// Adds an officer with `password` (bcrypt cost 4) and a fresh TOTP secret, sealed under the configured key as
    /// `user add` does; `clear` stores the secret in clear instead, as rows written before sealing hold it.
    @discardableResult
    func addOfficer(
        _ username: String,
        roles: [String],
        password: String = PortalHarness.password,
        clear: Bool = false
    ) async throws -> Officer {
        let hash = try await PasswordHasher.hash(password, cost: 4)
        let secret = TOTP.random().secret
        let stored = clear ? .clear(secret) : try self.engine.totpBox.seal(secret, username: username)
        let added = try await self.repository.addOfficer(
            NewOfficer(username: username, passwordHash: hash, roles: roles, totpSecret: stored),
            now: self.clock.now
        )
        try #require(added, "officer \(username) exists already")
        let officer = try await self.repository.officer(named: username)
        return try #require(officer)
    }

    /// The officer's authenticator code for the clock's step plus `offset` (the secret opened with the configured
    /// keys; an empty code when they do not open it).
    func code(for officer: Officer, offset: Int64 = 0) -> String {
        guard let secret = try? self.engine.totpBox.open(officer.totpSecret, username: officer.username) else {
            return ""
        }
        return TOTP(secret: secret).code(step: TOTP.step(at: self.clock.now) + offset)
    }

    /// The whole audit trail, oldest first.
    func audit() async throws -> [AuditEvent] {
        try await self.repository.auditEvents(since: Date(timeIntervalSince1970: 0))
    }

    /// The audited actions of one officer, oldest first.
    func actions(of username: String) async throws -> [String] {
        try await self.audit().filter { $0.username == username }.map(\.action)
    }

    /// Every log line so far, message and metadata, one per line.
    var logText: String {
        self.logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
    }

    // MARK: - Browsing

    /// Runs `body` with a browser on the in-process router.
    func browse(_ body: @Sendable (PortalBrowser) async throws -> Void) async throws {
        try await self.app.test(.router) { client in
            try await body(PortalBrowser(client: client))
        }
    }

    /// Signs `officer` in with a new browser on `app` (this replica unless given), runs `body` with that browser,
    /// and returns its session cookie.
    @discardableResult
    func signedInCookie(
        _ officer: Officer,
        on app: App? = nil,
        then body: @Sendable (PortalBrowser) async throws -> Void = { _ in }
    ) async throws -> String {
        try await (app ?? self.app).test(.router) { client in
            let browser = PortalBrowser(client: client)
            try await self.signIn(browser, officer)
            try await body(browser)
            return try #require(browser.cookie)
        }
    }

    /// Password and second factor with the clock's current code, ending on the start page.
    @discardableResult
    func signIn(
        _ browser: PortalBrowser,
        _ officer: Officer,
        password: String = PortalHarness.password
    ) async throws -> PortalReply {
        try await browser.signIn(officer.username, password: password, code: self.code(for: officer))
    }
}
