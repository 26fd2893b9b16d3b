// The portal's bearer token at the real verification-service: the contract between the two services.

import Crypto
import ENCrypto
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import Hummingbird
import InMemoryLogging
import Logging
import Metrics
import Testing

@testable import PortalService
@testable import VerificationService

@Suite("Portal tokens at verification-service", .postgres(PortalMigrations.group, VerificationMigrations.group))
struct PortalTokenTests {
    @Test("verification-service accepts the portal's token with the portal's public key and refuses another portal's")
    func tokenAtVerification() async throws {
        let portalKey = P256.Signing.PrivateKey()
        try await Self.verificationInternal(trusting: portalKey.publicKey.pemRepresentation) { url in
            // verification-service checks the token's expiry against the real clock.
            let trusted = try await Self.issueTeleTAN(portalKey: portalKey, verificationURL: url, officer: "officer1")
            guard case .issued(let teleTAN, _) = trusted.outcome else {
                Issue.record("the trusted portal got \(trusted.outcome)")
                return
            }
            #expect(TeleTAN(validating: teleTAN) != nil)

            // A portal with a key verification-service does not trust gets no teleTAN: the officer sees the 503 page.
            let stranger = try await Self.issueTeleTAN(
                portalKey: P256.Signing.PrivateKey(),
                verificationURL: url,
                officer: "officer2"
            )
            #expect(stranger.outcome == .unavailable)
            #expect(stranger.logText.contains("verification-service refused the portal's teleTAN request"))
        }
    }

    /// A portal signing with `portalKey` issues a TEST teleTAN for a new hotline officer, through the real HTTP client.
    private static func issueTeleTAN(
        portalKey: P256.Signing.PrivateKey,
        verificationURL: String,
        officer name: String
    ) async throws -> (outcome: TeleTANIssueOutcome, logText: String) {
        let database = try PostgresTestDatabase.require()
        let logs = InMemoryLogHandler()
        let logger = Logger(label: "portal-test", factory: { _ in logs })
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("portal-\(UUID().uuidString).pem")
        try portalKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let configuration = try PortalConfiguration.load(
            from: SettingsReader(values: [
                "DATABASE_URL": TestSettings.placeholderDatabase,
                "PORTAL_JWT_KEY_FILE": keyFile.path,
                "TOTP_KEY_FILE": TestKeyFiles.standard,
                "SERVICE_TOKEN_KEY_FILE": TestServiceKeys.privateKeyFile("portal-service"),
                "VERIFICATION_INTERNAL_URL": verificationURL,
                // The whole suite runs beside this test: a slow answer must not read as a refusal.
                "VERIFICATION_READ_TIMEOUT": "60s",
            ])
        )
        let teleTANs = HTTPTeleTANClient(
            baseURL: verificationURL,
            policy: configuration.upstream,
            serviceToken: configuration.serviceToken,
            logger: logger
        )
        let outcome = try await withCleanup {
            let engine = Portal.engine(
                configuration: configuration,
                dependencies: .postgres(client: database.client, teleTANs: teleTANs, logger: logger),
                logger: logger,
                metrics: NOOPMetricsHandler.instance
            )
            let added = try await engine.repository.addOfficer(
                NewOfficer(
                    username: name,
                    passwordHash: try await PasswordHasher.hash("correct-Horse-battery-9", cost: 4),
                    roles: ["c19hotline"],
                    totpSecret: try engine.totpBox.seal(TOTP.random().secret, username: name)
                ),
                now: Date()
            )
            try #require(added)
            let officer = try #require(try await engine.repository.officer(named: name))
            return try await engine.issueTeleTAN(officer: officer, kind: .test, authority: nil)
        } cleanup: {
            try await teleTANs.shutdown()
        }
        return (outcome, logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n"))
    }

    /// verification-service's internal API on a socket, on the test database, trusting `publicKeys` for teleTAN
    /// tokens.
    private static func verificationInternal(
        trusting publicKeys: String,
        _ body: @Sendable (_ url: String) async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let configuration = try VerificationConfiguration.load(
            from: SettingsReader(
                values: TestSettings.verification([
                    "TEST_RESULT_INTERNAL_URL": "http://127.0.0.1:1", "TELETAN_JWT_PUBLIC_KEYS": publicKeys,
                ])
            )
        )
        let dependencies = VerificationDependencies.postgres(
            client: database.client,
            configuration: configuration,
            logger: database.logger
        )
        let runtime = VerificationRuntime(
            configuration: configuration,
            dependencies: dependencies,
            environment: .testing(logger: database.logger)
        )
        let app = Application(
            router: try Verification.buildInternalRouter(runtime),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: database.logger
        )
        try await withCleanup {
            try await LiveServer.run(app) { port in try await body("http://127.0.0.1:\(port)") }
        } cleanup: {
            try await dependencies.shutdown()
        }
    }
}
