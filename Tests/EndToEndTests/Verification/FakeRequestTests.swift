// Plausible deniability: dummy requests look like real ones from outside and change nothing (cwa-satellites §1.5).

import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Testing

@testable import TestResultService
@testable import VerificationService

@Suite("Fake requests (PostgreSQL)", .postgres(VerificationMigrations.group, TestResultMigrations.group))
struct FakeRequestTests {
    static let fake: HTTPFields = [.contentType: "application/json", FakeMode.headerName: "1"]
    static let realWithHeader: HTTPFields = [.contentType: "application/json", FakeMode.headerName: "0"]

    /// Status, header names and body length: what an observer of the (encrypted) response can compare.
    private func shape(_ reply: VerificationHarness.Reply) -> String {
        let names = reply.headers.map(\.name.canonicalName).filter { $0 != "x-request-id" }.sorted()
        return "\(reply.status.code) \(names) \(reply.body.readableBytes)"
    }

    @Test("registrationToken: fake and real answers have the same status, headers and body length")
    func registrationTokenShape() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            let real = try await harness.register(guid: guid, headers: Self.realWithHeader)
            let fake = try await harness.register(guid: TestIDs.hashedGUID(), headers: Self.fake)
            let legacy = try await harness.register(guid: TestIDs.hashedGUID())

            #expect(real.status == .created)
            #expect(self.shape(fake) == self.shape(real))
            #expect(try real.string("responsePadding")?.count == 1)
            #expect(try legacy.json()["responsePadding"] == nil)
            #expect(RandomUUID.isValid(try fake.string("registrationToken") ?? ""))
            #expect(try await harness.count("app_session") == 2)
        }
    }

    @Test("testresult: fake and real answers have equal sizes, also with a long labId and for a teleTAN session")
    func testResultShape() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            let token = try await harness.registeredToken(guid: guid)
            let pending = try await harness.poll(token)
            try await harness.labResult(guid, code: 2, labID: String(repeating: "Ä", count: 64))
            let withLabID = try await harness.poll(token, headers: Self.realWithHeader)
            let teleTAN = try await harness.teleTAN()
            let teleToken = try await harness.registeredToken(teleTAN: teleTAN)
            let teleSession = try await harness.poll(teleToken)
            let fake = try await harness.poll(RandomUUID.generate(), headers: Self.fake)

            #expect(pending.status == .ok)
            #expect(fake.status == .ok)
            #expect(self.shape(fake) == self.shape(pending))
            #expect(self.shape(fake) == self.shape(withLabID))
            #expect(self.shape(fake) == self.shape(teleSession))
            #expect(fake.body.readableBytes == PaddedJSON.testResultSize)
        }
    }

    @Test("tan: fake and real answers have the same status, headers and body length")
    func tanShape() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            let token = try await harness.registeredToken(guid: guid)
            let real = try await harness.requestTAN(token, headers: Self.realWithHeader)
            let fake = try await harness.requestTAN(RandomUUID.generate(), headers: Self.fake)

            #expect(real.status == .created)
            #expect(self.shape(fake) == self.shape(real))
            #expect(try real.string("responsePadding")?.count == 15)
        }
    }

    @Test("fake requests touch no state: no session, no TAN, no quota use, no teleTAN redeemed, no call upstream")
    func fakesChangeNothing() async throws {
        try await VerificationHarness.run(["TEST_RESULT_CONNECT_TIMEOUT": "200ms"], testResultURL: "http://127.0.0.1:9")
        { harness async throws in
            let guid = TestIDs.hashedGUID()
            let token = try await harness.registeredToken(guid: guid)
            let teleTAN = try await harness.teleTAN()
            let registerFake = try await harness.register(guid: TestIDs.hashedGUID(), headers: Self.fake)
            let sameGUIDFake = try await harness.register(guid: guid, headers: Self.fake)
            let teleTANFake = try await harness.registerTeleTAN(teleTAN, headers: Self.fake)
            // test-result-service is unreachable here: a fake that called it would get 503.
            let pollFake = try await harness.poll(token, headers: Self.fake)
            let tanFake = try await harness.requestTAN(token, headers: Self.fake)

            #expect(
                [registerFake.status, sameGUIDFake.status, teleTANFake.status, tanFake.status] == [
                    .created, .created, .created, .created,
                ]
            )
            #expect(pollFake.status == .ok)
            #expect(try await harness.count("app_session") == 1)
            #expect(try await harness.count("app_session", where: "tan_counter = 0") == 1)
            #expect(try await harness.count("tan") == 0)
            #expect(try await harness.count("tele_tan", where: "redeemed_at IS NULL") == 1)
        }
    }

    @Test("a malformed fake request fails like a malformed real one")
    func malformedFake() async throws {
        try await VerificationHarness.run { harness async throws in
            let fake = try await harness.post(
                harness.external,
                "/version/v1/registrationToken",
                #"{"key":"abc","keyType":"GUID"}"#,
                headers: Self.fake
            )
            let real = try await harness.post(
                harness.external,
                "/version/v1/registrationToken",
                #"{"key":"abc","keyType":"GUID"}"#
            )

            #expect(fake.status == .badRequest)
            #expect(fake.text == real.text)
        }
    }

    @Test("a fake request waits a delay drawn around its own endpoint's real durations, not another's")
    func fakeDelayPerEndpoint() async throws {
        try await VerificationHarness.run { harness async throws in
            let waits = Mutexed<[Duration]>([])
            let estimator = FakeDelayEstimator(initial: .milliseconds(10), samples: 5)
            for _ in 0..<50 { estimator.record(.tan, duration: .milliseconds(400)) }
            let router = Router(context: ServiceRequestContext.self)
            var controller = ExternalController(
                engine: harness.runtime.engine,
                delays: estimator,
                metrics: harness.runtime.metrics
            )
            controller.sleep = { duration in waits.withLock { $0.append(duration) } }
            controller.addRoutes(to: router.group("version/v1"))
            let app = Application(router: router)

            let tan = try await harness.post(
                app,
                "/version/v1/tan",
                VerificationBodies.token(RandomUUID.generate()),
                headers: Self.fake
            )
            let tanWait = waits.withLock { taken in
                defer { taken.removeAll() }
                return taken
            }
            _ = try await harness.post(
                app,
                "/version/v1/registrationToken",
                VerificationBodies.registration(guid: TestIDs.hashedGUID()),
                headers: Self.fake
            )
            let tokenWait = waits.withLock { taken in
                defer { taken.removeAll() }
                return taken
            }

            #expect(tan.status == .created)
            // Poisson around 400 ms (standard deviation 20 ms) against Poisson around 10 ms.
            #expect(
                tanWait.count == 1 && tanWait[0] > .milliseconds(250) && tanWait[0] < .milliseconds(550),
                "\(tanWait)"
            )
            #expect(tokenWait.allSatisfy { $0 < .milliseconds(100) }, "\(tokenWait)")
        }
    }
}
