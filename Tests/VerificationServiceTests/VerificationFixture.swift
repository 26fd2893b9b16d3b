// Building verification-service for tests: keys and tokens, configuration, and a harness with a real database
// and a real test-result-service on a socket.

import Crypto
import ENCrypto
import ENModels
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PostgresNIO
import Testing
import _CryptoExtras

@testable import TestResultService
@testable import VerificationService

/// Signing keys for bearer tokens, made once per test run.
struct TestSigningKeys: Sendable {
    let ec = P256.Signing.PrivateKey()
    let rsa = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    /// A key the service does not know.
    let stranger = P256.Signing.PrivateKey()

    static let shared = TestSigningKeys()

    /// The public keys as PEM, the form of `TELETAN_JWT_PUBLIC_KEYS`.
    var publicPEM: String { self.ec.publicKey.pemRepresentation + "\n" + self.rsa.publicKey.pemRepresentation }
}

/// Compact JWS tokens for tests.
enum TestJWT {
    static func claims(
        roles: [String],
        expiresIn: TimeInterval = 300,
        now: Date = Date(timeIntervalSince1970: 1_700_000_000)
    ) -> [String: Any] {
        [
            "exp": now.timeIntervalSince1970 + expiresIn, "iat": now.timeIntervalSince1970,
            "realm_access": ["roles": roles],
        ]
    }

    static func segment(_ object: [String: Any]) -> String {
        Base64URL.encode(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    static func es256(
        _ claims: [String: Any],
        key: P256.Signing.PrivateKey = TestSigningKeys.shared.ec,
        header: [String: Any] = [:]
    ) -> String {
        let input =
            self.segment(["alg": "ES256", "typ": "JWT"].merging(header) { _, new in new }) + "." + self.segment(claims)
        let signature = try! key.signature(for: Array(input.utf8)).rawRepresentation
        return input + "." + Base64URL.encode(signature)
    }

    static func rs256(_ claims: [String: Any], key: _RSA.Signing.PrivateKey = TestSigningKeys.shared.rsa) -> String {
        let input = self.segment(["alg": "RS256", "typ": "JWT"]) + "." + self.segment(claims)
        let signature = try! key.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5).rawRepresentation
        return input + "." + Base64URL.encode(signature)
    }

    static func unsigned(_ claims: [String: Any]) -> String {
        self.segment(["alg": "none", "typ": "JWT"]) + "." + self.segment(claims) + "."
    }

    /// HS256 keyed with the text of the public keys: the classic algorithm-confusion forgery.
    static func hs256WithPublicKey(_ claims: [String: Any]) -> String {
        let input = self.segment(["alg": "HS256", "typ": "JWT"]) + "." + self.segment(claims)
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array(input.utf8),
            using: SymmetricKey(data: Array(TestSigningKeys.shared.publicPEM.utf8))
        )
        return input + "." + Base64URL.encode(Array(mac))
    }
}

enum VerificationFixture {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    /// A valid configuration with ports 0, a placeholder database and the test keys, plus `overrides`.
    static func configuration(_ overrides: [String: String] = [:]) throws -> VerificationConfiguration {
        var values = [
            "DATABASE_URL": "postgres://test:secret@127.0.0.1:1/test",
            "HTTP_PORT": "0",
            "INTERNAL_HTTP_PORT": "0",
            "TELETAN_JWT_PUBLIC_KEYS": TestSigningKeys.shared.publicPEM,
            "TEST_RESULT_RETRY_BACKOFF": "1ms",
            "FAKE_DELAY_INITIAL": "1ms",
        ]
        values.merge(overrides) { _, new in new }
        return try VerificationConfiguration.load(from: SettingsReader(values: values))
    }

    /// A DOB hash as the app computes it: SHA-256 of GUID and birth date, first character replaced by `x`.
    static func dobHash(_ seed: String = UUID().uuidString) -> String {
        "x" + SecretHash.sha256Hex("dob-\(seed)").dropFirst()
    }

    /// Both routers' parts over `client`, a database client the caller runs (or never does); the caller shuts the
    /// dependencies down.
    static func parts(
        client: PostgresClient,
        configuration: VerificationConfiguration,
        logger: Logger
    ) -> (Verification.Parts, VerificationDependencies) {
        let dependencies = VerificationDependencies.postgres(
            client: client,
            configuration: configuration,
            logger: logger
        )
        return (
            Verification.Parts(configuration: configuration, dependencies: dependencies, environment: .testing()),
            dependencies
        )
    }

    static func registration(guid: String, dob: String? = nil) -> String {
        if let dob { return #"{"key":"\#(guid)","keyType":"GUID","keyDob":"\#(dob)"}"# }
        return #"{"key":"\#(guid)","keyType":"GUID"}"#
    }

    static func teleTANRegistration(_ teleTAN: String) -> String {
        #"{"key":"\#(teleTAN)","keyType":"TELETAN"}"#
    }

    static func token(_ token: String) -> String { #"{"registrationToken":"\#(token)"}"# }
    static func tan(_ tan: String) -> String { #"{"tan":"\#(tan)"}"# }
}

/// verification-service on the test database, with test-result-service's real internal API on a socket, a
/// manual clock, and helpers to call both of verification's routers.
struct VerificationHarness: Sendable {
    typealias App = Application<RouterResponder<ServiceRequestContext>>

    let database: PostgresTestDatabase
    let clock: ManualClock
    let parts: Verification.Parts
    let external: App
    let `internal`: App
    let labResults: PostgresTestResultRepository

    /// Runs `body` with a harness; test-result-service answers at `testResultURL` unless one is given.
    static func run(
        _ overrides: [String: String] = [:],
        testResultURL: String? = nil,
        _ body: @Sendable (VerificationHarness) async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let clock = ManualClock(VerificationFixture.start)
        let environment = ServiceEnvironment.testing()
        let testResult = TestResultDependencies.postgres(
            client: database.client,
            logger: database.logger,
            clock: clock.wallClock
        )
        let testResultApp = Application(
            router: TestResult.buildInternalRouter(
                configuration: try TestResultConfiguration.load(
                    from: SettingsReader(values: [
                        "DATABASE_URL": "postgres://test:secret@127.0.0.1:1/test", "HTTP_PORT": "0",
                        "INTERNAL_HTTP_PORT": "0",
                    ])
                ),
                dependencies: testResult,
                environment: environment,
                metrics: TestResultMetrics(factory: environment.metricsFactory)
            ),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: database.logger
        )
        try await LiveServer.run(testResultApp) { port in
            var values = overrides
            values["TEST_RESULT_INTERNAL_URL"] = testResultURL ?? "http://127.0.0.1:\(port)"
            let configuration = try VerificationFixture.configuration(values)
            let dependencies = VerificationDependencies.postgres(
                client: database.client,
                configuration: configuration,
                logger: database.logger,
                clock: clock.wallClock
            )
            let parts = Verification.Parts(
                configuration: configuration,
                dependencies: dependencies,
                environment: environment
            )
            let harness = VerificationHarness(
                database: database,
                clock: clock,
                parts: parts,
                external: Application(router: try Verification.buildPublicRouter(parts)),
                internal: Application(router: try Verification.buildInternalRouter(parts)),
                labResults: PostgresTestResultRepository(client: database.client, logger: database.logger)
            )
            try await withCleanup {
                try await body(harness)
            } cleanup: {
                try await dependencies.shutdown()
            }
        }
    }

    // MARK: - Calls

    typealias Reply = RouterReply

    func post(_ app: App, _ uri: String, _ body: String?, headers: HTTPFields = .json) async throws -> Reply {
        try await app.post(uri, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }

    /// The same request `count` times at once.
    func parallel(
        _ count: Int,
        _ app: App,
        _ uri: String,
        _ body: String?,
        headers: HTTPFields = .json
    ) async throws -> [Reply] {
        try await app.post(uri, headers: headers, body: body.map { ByteBuffer(string: $0) }, times: count)
    }

    // MARK: - Journeys

    func register(guid: String, dob: String? = nil, headers: HTTPFields = .json) async throws -> Reply {
        try await self.post(
            self.external,
            "/version/v1/registrationToken",
            VerificationFixture.registration(guid: guid, dob: dob),
            headers: headers
        )
    }

    /// Registers and returns the token (the registration must succeed).
    func registeredToken(guid: String, dob: String? = nil) async throws -> String {
        let reply = try await self.register(guid: guid, dob: dob)
        guard reply.status == .created, let token = try reply.string("registrationToken") else {
            throw HarnessError("registration failed: \(reply.status) \(reply.text)")
        }
        return token
    }

    func poll(_ token: String, headers: HTTPFields = .json) async throws -> Reply {
        try await self.post(self.external, "/version/v1/testresult", VerificationFixture.token(token), headers: headers)
    }

    func requestTAN(_ token: String, headers: HTTPFields = .json) async throws -> Reply {
        try await self.post(self.external, "/version/v1/tan", VerificationFixture.token(token), headers: headers)
    }

    func verify(_ tan: String) async throws -> Reply {
        try await self.post(self.internal, "/version/v1/tan/verify", VerificationFixture.tan(tan))
    }

    /// A teleTAN created through the internal API with a hotline token.
    func createTeleTAN(_ type: TeleTANType = .test, roles: [String]? = nil) async throws -> Reply {
        let roles = roles ?? [type == .test ? "c19hotline" : "c19hotline_event"]
        var headers: HTTPFields = [
            .authorization: "Bearer " + TestJWT.es256(TestJWT.claims(roles: roles, now: self.clock.now))
        ]
        headers[InternalController.teleTANTypeHeader] = type.rawValue
        return try await self.post(self.internal, "/version/v1/tan/teletan", nil, headers: headers)
    }

    func teleTAN(_ type: TeleTANType = .test) async throws -> String {
        let reply = try await self.createTeleTAN(type)
        guard reply.status == .created, let value = try reply.string("value") else {
            throw HarnessError("teleTAN failed: \(reply.status) \(reply.text)")
        }
        return value
    }

    /// A lab result for `guid` in test-result-service (code 2 = positive PCR, 7 = positive rapid test).
    func labResult(_ guid: String, code: Int, labID: String? = "lab-1") async throws {
        _ = try await self.labResults.store(
            [
                ResultUpload(
                    key: guid.lowercased(),
                    result: LabTestResult(code: code)!,
                    sampleCollectedAt: self.clock.now.addingTimeInterval(-3600),
                    labID: labID
                )
            ],
            now: self.clock.now
        )
    }

    /// `SELECT count(*)` of a table.
    func count(_ table: String, where condition: String = "true") async throws -> Int {
        try await self.database.count(table, where: condition)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
