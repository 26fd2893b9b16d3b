// verification-service with its real peer: the test database, and test-result-service's internal API on a socket.

import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import VerificationService

/// verification-service on the test database, with test-result-service's real internal API on a socket, a
/// manual clock, and helpers to call both of verification's routers.
struct VerificationHarness: Sendable {
    /// 2023-11-14 22:13:20 UTC, where the harness's clock starts.
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    let database: PostgresTestDatabase
    let clock: ManualClock
    let runtime: VerificationRuntime
    let external: ServiceApplication<ServiceRequestContext>
    let `internal`: ServiceApplication<InternalRequestContext>

    /// Runs `body` with a harness; test-result-service answers at `testResultURL` unless one is given.
    static func run(
        _ overrides: [String: String] = [:],
        testResultURL: String? = nil,
        _ body: @Sendable (VerificationHarness) async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let clock = ManualClock(Self.start)
        let environment = ServiceEnvironment.testing()
        try await TestResultPeer.run(database: database, clock: clock, environment: environment) { port in
            var values = overrides
            values["TEST_RESULT_INTERNAL_URL"] = testResultURL ?? "http://127.0.0.1:\(port)"
            let configuration = try VerificationConfiguration.load(
                from: SettingsReader(values: TestSettings.verification(values))
            )
            let dependencies = VerificationDependencies.postgres(
                client: database.client,
                configuration: configuration,
                logger: database.logger,
                clock: clock.wallClock,
                // A machine busy with the whole suite was seen to keep parallel requests waiting over a minute.
                leaseTimeout: .seconds(300)
            )
            let runtime = VerificationRuntime(
                configuration: configuration,
                dependencies: dependencies,
                environment: environment
            )
            let harness = VerificationHarness(
                database: database,
                clock: clock,
                runtime: runtime,
                external: Application(router: try Verification.buildPublicRouter(runtime)),
                internal: Application(router: try Verification.buildInternalRouter(runtime))
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

    func post(
        _ app: some ApplicationProtocol,
        _ uri: String,
        _ body: String?,
        headers: HTTPFields = .json
    ) async throws -> Reply {
        try await app.post(
            uri,
            headers: TestServiceKeys.verificationCaller(headers, uri: uri),
            body: body.map { ByteBuffer(string: $0) }
        )
    }

    /// The same request `count` times at once.
    func parallel(
        _ count: Int,
        _ app: some ApplicationProtocol,
        _ uri: String,
        _ body: String?,
        headers: HTTPFields = .json
    ) async throws -> [Reply] {
        try await app.post(
            uri,
            headers: TestServiceKeys.verificationCaller(headers, uri: uri),
            body: body.map { ByteBuffer(string: $0) },
            times: count
        )
    }

    // MARK: - Journeys

    func register(guid: String, dob: String? = nil, headers: HTTPFields = .json) async throws -> Reply {
        try await self.post(
            self.external,
            "/version/v1/registrationToken",
            VerificationBodies.registration(guid: guid, dob: dob),
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

    /// Registers a teleTAN and returns the reply, whatever it is.
    func registerTeleTAN(_ teleTAN: String, headers: HTTPFields = .json) async throws -> Reply {
        try await self.post(
            self.external,
            "/version/v1/registrationToken",
            VerificationBodies.teleTANRegistration(teleTAN),
            headers: headers
        )
    }

    /// Registers a teleTAN and returns the token (the registration must succeed).
    func registeredToken(teleTAN: String) async throws -> String {
        let reply = try await self.registerTeleTAN(teleTAN)
        guard reply.status == .created, let token = try reply.string("registrationToken") else {
            throw HarnessError("teleTAN registration failed: \(reply.status) \(reply.text)")
        }
        return token
    }

    func poll(_ token: String, headers: HTTPFields = .json) async throws -> Reply {
        try await self.post(self.external, "/version/v1/testresult", VerificationBodies.token(token), headers: headers)
    }

    func requestTAN(_ token: String, headers: HTTPFields = .json) async throws -> Reply {
        try await self.post(self.external, "/version/v1/tan", VerificationBodies.token(token), headers: headers)
    }

    func verify(_ tan: String) async throws -> Reply {
        try await self.post(self.internal, "/version/v1/tan/verify", VerificationBodies.tan(tan))
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
    func labResult(_ guid: String, code: Int, labID: String? = "lab-1", dobProtected: Bool = false) async throws {
        try await TestResultPeer.storeResult(
            guid,
            code: code,
            labID: labID,
            dobProtected: dobProtected,
            database: self.database,
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
