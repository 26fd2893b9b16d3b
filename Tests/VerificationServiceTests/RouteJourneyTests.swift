// Journeys through both routers over in-memory dependencies: registration, results, TANs, teleTANs, an upstream
// outage. No database and no test-result-service: the stand-in is a table the test fills.

import Crypto
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Testing

@testable import VerificationService

@Suite("Journeys through the routers (in-memory dependencies)")
struct RouteJourneyTests {
    /// Both routers of one in-memory runtime, the test-result stand-in they ask, and the clock they read.
    struct Routers: Sendable {
        let external: ServiceApplication<ServiceRequestContext>
        let `internal`: ServiceApplication<InternalRequestContext>
        let testResults: InMemoryTestResultClient
        let clock: ManualClock

        init() throws {
            let testResults = InMemoryTestResultClient()
            let clock = ManualClock()
            let runtime = try VerificationFixture.inMemoryRuntime(testResults: testResults, clock: clock.wallClock)
            self.external = Application(router: try Verification.buildPublicRouter(runtime))
            self.internal = Application(router: try Verification.buildInternalRouter(runtime))
            self.testResults = testResults
            self.clock = clock
        }

        /// A JSON POST to the app-facing router.
        func post(_ uri: String, _ body: String) async throws -> RouterReply {
            try await self.external.post(uri, headers: .json, body: ByteBuffer(string: body))
        }

        /// Registers a hashed GUID.
        func register(guid: String) async throws -> RouterReply {
            try await self.post("/version/v1/registrationToken", VerificationBodies.registration(guid: guid))
        }

        /// Polls the result of a registration token.
        func poll(_ token: String) async throws -> RouterReply {
            try await self.post("/version/v1/testresult", VerificationBodies.token(token))
        }

        /// Asks for a TAN with a registration token.
        func requestTAN(_ token: String) async throws -> RouterReply {
            try await self.post("/version/v1/tan", VerificationBodies.token(token))
        }

        /// The internal TAN check that submission-service makes.
        func verify(_ tan: String) async throws -> RouterReply {
            try await self.internal.post(
                "/version/v1/tan/verify",
                headers: TestServiceKeys.verificationCaller(.json, uri: "/version/v1/tan/verify"),
                body: ByteBuffer(string: VerificationBodies.tan(tan))
            )
        }

        /// Creates a teleTAN of `type` at the internal router; with `roles`, as a bearer token valid now signed by
        /// `key` (a key the service trusts unless given), without, with no Authorization header.
        func createTeleTAN(
            _ type: TeleTANType,
            roles: [String]?,
            key: P256.Signing.PrivateKey = TestSigningKeys.shared.ec
        ) async throws -> RouterReply {
            var headers: HTTPFields = [:]
            headers[InternalController.teleTANTypeHeader] = type.rawValue
            if let roles {
                headers[.authorization] =
                    "Bearer " + TestJWT.es256(TestJWT.claims(roles: roles, now: self.clock.now), key: key)
            }
            return try await self.internal.post(
                "/version/v1/tan/teletan",
                headers: TestServiceKeys.verificationCaller(headers, uri: "/version/v1/tan/teletan"),
                body: nil
            )
        }
    }

    @Test("a GUID: registered, pending, then positive with sc and labId; its TAN verifies once (200, then 404)")
    func guidJourney() async throws {
        let routers = try Routers()
        let guid = TestIDs.hashedGUID()

        let registration = try await routers.register(guid: guid)
        let token = try #require(try registration.string("registrationToken"))
        let pending = try await routers.poll(token)
        let earlyTAN = try await routers.requestTAN(token)
        await routers.testResults.set(ReportedTestResult(testResult: 2, sc: 1_699_990_000, labId: "lab-7"), for: guid)
        let positive = try await routers.poll(token)
        let tanReply = try await routers.requestTAN(token)
        let tan = try #require(try tanReply.string("tan"))
        let secondTAN = try await routers.requestTAN(token)
        let verified = try await routers.verify(tan)
        let again = try await routers.verify(tan)
        let secondRegistration = try await routers.register(guid: guid)

        #expect(registration.status == .created)
        #expect(RandomUUID.isValid(token))
        #expect(pending.status == .ok)
        #expect(try pending.json()["testResult"] as? Int == 0)
        #expect(earlyTAN.status == .badRequest)
        #expect(positive.status == .ok)
        #expect(try positive.json()["testResult"] as? Int == 2)
        #expect(try positive.json()["sc"] as? Int == 1_699_990_000)
        #expect(try positive.string("labId") == "lab-7")
        #expect(tanReply.status == .created)
        #expect(RandomUUID.isValid(tan))
        #expect(secondTAN.status == .badRequest, "one TAN per registration token")
        #expect(verified.status == .ok)
        #expect(verified.headers[InternalController.teleTANTypeHeader] == nil)
        #expect(again.status == .notFound)
        #expect(secondRegistration.status == .badRequest, "a GUID registers once")
    }

    @Test(
        "a teleTAN needs a trusted hotline bearer token; it registers once, and its TAN verifies with its type"
    )
    func teleTANJourney() async throws {
        let routers = try Routers()

        let anonymous = try await routers.createTeleTAN(.test, roles: nil)
        let stranger = try await routers.createTeleTAN(
            .test,
            roles: ["c19hotline"],
            key: TestSigningKeys.shared.stranger
        )
        let wrongRole = try await routers.createTeleTAN(.event, roles: ["c19hotline"])
        let created = try await routers.createTeleTAN(.test, roles: ["c19hotline"])
        let teleTAN = try #require(try created.string("value"))
        let registration = try await routers.post(
            "/version/v1/registrationToken",
            VerificationBodies.teleTANRegistration(teleTAN)
        )
        let token = try #require(try registration.string("registrationToken"))
        let again = try await routers.post(
            "/version/v1/registrationToken",
            VerificationBodies.teleTANRegistration(teleTAN)
        )
        let result = try await routers.poll(token)
        let tan = try #require(try await routers.requestTAN(token).string("tan"))
        let verified = try await routers.verify(tan)

        #expect(anonymous.status == .badRequest, "no Authorization header")
        #expect(stranger.status == .unauthorized, "signed by a key the service does not know")
        #expect(wrongRole.status == .unauthorized)
        #expect(created.status == .created)
        #expect(TeleTAN(validating: teleTAN) != nil)
        #expect(registration.status == .created)
        #expect(again.status == .badRequest, "a teleTAN is redeemed by its registration")
        #expect(try result.json()["testResult"] as? Int == 2)
        #expect(verified.status == .ok)
        #expect(verified.headers[InternalController.teleTANTypeHeader] == "TEST")
    }

    @Test("test-result-service unavailable: polling and the TAN request are 503 with Retry-After; back, they answer")
    func testResultsUnavailable() async throws {
        let routers = try Routers()
        let guid = TestIDs.hashedGUID()
        let token = try #require(try await routers.register(guid: guid).string("registrationToken"))
        await routers.testResults.set(ReportedTestResult(testResult: 2, sc: nil, labId: nil), for: guid)

        await routers.testResults.setUnavailable(true)
        let poll = try await routers.poll(token)
        let tan = try await routers.requestTAN(token)
        await routers.testResults.setUnavailable(false)
        let recovered = try await routers.requestTAN(token)

        #expect(poll.status == .serviceUnavailable)
        #expect(poll.headers[.retryAfter] != nil)
        #expect(tan.status == .serviceUnavailable)
        #expect(tan.headers[.retryAfter] != nil)
        #expect(recovered.status == .created, "the refused request used none of the TAN quota")
    }
}
