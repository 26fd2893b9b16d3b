// verification-service's internal port: every call needs a service token, and each caller reaches only its routes.

import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import TestResultService
@testable import VerificationService

@Suite("internal callers (PostgreSQL)", .postgres(VerificationMigrations.group, TestResultMigrations.group))
struct InternalCallerTests {
    private static func token(_ caller: String, audience: String = "verification-service") -> HTTPFields {
        HTTPFields.json + TestServiceKeys.header(caller, for: audience)
    }

    @Test("a TAN survives calls without a token, with a foreign caller's token and with one for another service")
    func tanVerification() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            let token = try await harness.registeredToken(guid: guid)
            let tan = try #require(try await harness.requestTAN(token).string("tan"))
            let body = VerificationBodies.tan(tan)
            let path = "/version/v1/tan/verify"

            // The harness's own post would add the route owner's token; this one goes out bare.
            let anonymous = try await harness.internal.post(path, headers: .json, body: ByteBuffer(string: body))
            let portal = try await harness.post(harness.internal, path, body, headers: Self.token("portal-service"))
            let dcc = try await harness.post(harness.internal, path, body, headers: Self.token("dcc-server"))
            let misdirected = try await harness.post(
                harness.internal,
                path,
                body,
                headers: Self.token("submission-service", audience: "test-result-service")
            )
            let submission = try await harness.post(
                harness.internal,
                path,
                body,
                headers: Self.token("submission-service")
            )

            #expect(anonymous.status == .unauthorized)
            #expect(portal.status == .forbidden)
            #expect(dcc.status == .forbidden)
            #expect(misdirected.status == .unauthorized)
            // Refused calls did not use the TAN up: submission's call is the first that counts.
            #expect(submission.status == .ok)
        }
    }

    @Test("only the portal creates teleTANs and only the dcc-server reads internal results")
    func otherRoutes() async throws {
        try await VerificationHarness.run { harness async throws in
            var teleTANHeaders: HTTPFields = [
                .authorization: "Bearer " + TestJWT.es256(TestJWT.claims(roles: ["c19hotline"], now: harness.clock.now))
            ]
            teleTANHeaders[InternalController.teleTANTypeHeader] = "TEST"
            let bySubmission = try await harness.post(
                harness.internal,
                "/version/v1/tan/teletan",
                nil,
                headers: teleTANHeaders + TestServiceKeys.header("submission-service", for: "verification-service")
            )
            let byPortal = try await harness.post(
                harness.internal,
                "/version/v1/tan/teletan",
                nil,
                headers: teleTANHeaders + TestServiceKeys.header("portal-service", for: "verification-service")
            )

            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            let token = try await harness.registeredToken(guid: guid)
            let resultBody = VerificationBodies.token(token)
            let resultBySubmission = try await harness.post(
                harness.internal,
                "/version/v1/testresult",
                resultBody,
                headers: Self.token("submission-service")
            )
            let resultByDCC = try await harness.post(
                harness.internal,
                "/version/v1/testresult",
                resultBody,
                headers: Self.token("dcc-server")
            )

            #expect(bySubmission.status == .forbidden)
            #expect(byPortal.status == .created)
            #expect(try await harness.count("tele_tan") == 1)
            #expect(resultBySubmission.status == .forbidden)
            #expect(resultByDCC.status == .ok)
        }
    }
}
