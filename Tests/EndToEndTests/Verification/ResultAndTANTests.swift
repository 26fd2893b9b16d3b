// Result polling, the DOB check, TAN preconditions and quota, TAN validity and single use (cwa-satellites §1.4).

import ENCrypto
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import TestResultService
@testable import VerificationService

@Suite("Results and TANs (PostgreSQL)", .postgres(VerificationMigrations.group, TestResultMigrations.group))
struct ResultAndTANTests {
    @Test("polling reports pending until the lab posts, then the lab's result, sc and labId")
    func pollThroughTestResultService() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            let token = try await harness.registeredToken(guid: guid)
            let pending = try await harness.poll(token).json()
            try await harness.labResult(guid, code: 2, labID: "lab-9")
            let positive = try await harness.poll(token).json()

            #expect(pending["testResult"] as? Int == 0)
            #expect(positive["testResult"] as? Int == 2)
            #expect(positive["labId"] as? String == "lab-9")
            #expect(positive["sc"] as? Int == Int(VerificationHarness.start.timeIntervalSince1970) - 3600)
            #expect((positive["responsePadding"] as? String)?.isEmpty == false)
        }
    }

    @Test("a DOB hash whose result differs from the GUID's is 403 on the poll, on the TAN request and internally")
    func dobMismatch() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            let dob = TestIDs.dobHash()
            let token = try await harness.registeredToken(guid: guid, dob: dob)
            try await harness.labResult(guid, code: 2)
            let poll = try await harness.poll(token)
            let tan = try await harness.requestTAN(token)
            let internalPoll = try await harness.post(
                harness.internal,
                "/version/v1/testresult",
                VerificationBodies.token(token)
            )
            try await harness.labResult(dob, code: 2)
            let matching = try await harness.poll(token)

            #expect(poll.status == .forbidden)
            #expect(tan.status == .forbidden)
            #expect(internalPoll.status == .forbidden)
            #expect(matching.status == .ok)
            #expect(try matching.json()["testResult"] as? Int == 2)
            #expect(try await harness.count("tan") == 0)
        }
    }

    @Test("with DOB_HASH_CHECK_EXTERNAL=false the app's poll skips the DOB check; the internal one does not")
    func dobCheckSwitch() async throws {
        try await VerificationHarness.run(["DOB_HASH_CHECK_EXTERNAL": "false"]) { harness async throws in
            let guid = TestIDs.hashedGUID()
            let token = try await harness.registeredToken(guid: guid, dob: TestIDs.dobHash())
            try await harness.labResult(guid, code: 2)

            #expect(try await harness.poll(token).status == .ok)
            #expect(
                try await harness.post(harness.internal, "/version/v1/testresult", VerificationBodies.token(token))
                    .status == .forbidden
            )
        }
    }

    @Test("a teleTAN session polls positive, dated at registration, without labId; internally it is 403")
    func teleTANSessionResult() async throws {
        try await VerificationHarness.run { harness async throws in
            let teleTAN = try await harness.teleTAN()
            let token = try await harness.registeredToken(teleTAN: teleTAN)
            harness.clock.advance(by: 600)
            let result = try await harness.poll(token).json()
            let internalPoll = try await harness.post(
                harness.internal,
                "/version/v1/testresult",
                VerificationBodies.token(token)
            )

            #expect(result["testResult"] as? Int == 2)
            #expect(result["sc"] as? Int == Int(VerificationHarness.start.timeIntervalSince1970))
            #expect(result["labId"] == nil)
            #expect(internalPoll.status == .forbidden)
        }
    }

    @Test("the internal poll returns the hashed GUID as testId; an unknown token is 404 there and 400 outside")
    func internalPoll() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            let token = try await harness.registeredToken(guid: guid.uppercased())
            try await harness.labResult(guid, code: 7)
            let reply = try await harness.post(
                harness.internal,
                "/version/v1/testresult",
                VerificationBodies.token(token)
            ).json()
            let unknown = RandomUUID.generate()

            #expect(reply["testId"] as? String == guid)
            #expect(reply["testResult"] as? Int == 7)
            #expect(
                try await harness.post(harness.internal, "/version/v1/testresult", VerificationBodies.token(unknown))
                    .status == .notFound
            )
            #expect(try await harness.poll(unknown).status == .badRequest)
        }
    }

    @Test(
        "TANs only for positive PCR (2) or rapid (7) results",
        arguments: [(0, false), (1, false), (2, true), (3, false), (6, false), (7, true), (8, false)]
    )
    func tanPreconditions(code: Int, issued: Bool) async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            let token = try await harness.registeredToken(guid: guid)
            if code != 0 { try await harness.labResult(guid, code: code) }
            let reply = try await harness.requestTAN(token)

            #expect(reply.status == (issued ? .created : .badRequest))
            #expect(try await harness.count("tan") == (issued ? 1 : 0))
            #expect(try await harness.count("app_session", where: "tan_counter = \(issued ? 1 : 0)") == 1)
        }
    }

    @Test("one TAN per token by default; TAN_PER_REGISTRATION_TOKEN=2 allows two; 20 parallel requests get one")
    func tanQuota() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            let token = try await harness.registeredToken(guid: guid)
            let first = try await harness.requestTAN(token)
            let second = try await harness.requestTAN(token)
            let racedGUID = TestIDs.hashedGUID()
            try await harness.labResult(racedGUID, code: 2)
            let racedToken = try await harness.registeredToken(guid: racedGUID)
            let raced = try await harness.parallel(
                20,
                harness.external,
                "/version/v1/tan",
                VerificationBodies.token(racedToken)
            )

            #expect(first.status == .created)
            #expect(second.status == .badRequest)
            #expect(raced.filter { $0.status == .created }.count == 1)
            #expect(try await harness.count("tan") == 2)
        }
        try await VerificationHarness.run(["TAN_PER_REGISTRATION_TOKEN": "2"]) { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            let token = try await harness.registeredToken(guid: guid)
            let statuses = [
                try await harness.requestTAN(token).status, try await harness.requestTAN(token).status,
                try await harness.requestTAN(token).status,
            ]
            #expect(statuses == [.created, .created, .badRequest])
        }
    }

    @Test("a TAN verifies once, within 14 days; a teleTAN-derived TAN carries its type in X-CWA-TELETAN-TYPE")
    func tanVerification() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            let tan = try await harness.requestTAN(try await harness.registeredToken(guid: guid)).string("tan") ?? ""
            let verified = try await harness.verify(tan)
            let again = try await harness.verify(tan)

            var lateTANs: [String] = []
            for _ in 0..<2 {
                let lateGUID = TestIDs.hashedGUID()
                try await harness.labResult(lateGUID, code: 2)
                lateTANs.append(
                    try await harness.requestTAN(try await harness.registeredToken(guid: lateGUID)).string("tan") ?? ""
                )
            }

            let teleTAN = try await harness.teleTAN(.event)
            let teleToken = try await harness.registeredToken(teleTAN: teleTAN)
            let teleTANDerived = try await harness.requestTAN(teleToken).string("tan") ?? ""
            let teleVerified = try await harness.verify(teleTANDerived)

            harness.clock.advance(by: 14 * 86400 - 1)
            let lastSecond = try await harness.verify(lateTANs[0])
            harness.clock.advance(by: 1)
            let expired = try await harness.verify(lateTANs[1])

            #expect(verified.status == .ok)
            #expect(verified.headers[InternalController.teleTANTypeHeader] == nil)
            #expect(verified.body.readableBytes == 0)
            #expect(again.status == .notFound)
            #expect(teleVerified.status == .ok)
            #expect(teleVerified.headers[InternalController.teleTANTypeHeader] == "EVENT")
            #expect(lastSecond.status == .ok)
            #expect(expired.status == .notFound)
        }
    }

    @Test("100 parallel verifications of one TAN: exactly one 200")
    func parallelVerification() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            let tan = try await harness.requestTAN(try await harness.registeredToken(guid: guid)).string("tan") ?? ""
            let replies = try await harness.parallel(
                100,
                harness.internal,
                "/version/v1/tan/verify",
                VerificationBodies.tan(tan)
            )

            #expect(replies.filter { $0.status == .ok }.count == 1)
            #expect(replies.filter { $0.status == .notFound }.count == 99)
        }
    }

    @Test(
        "a TAN verified by a named submission attempt: that attempt 200 again, another 410 naming it, the lookup by hash tells"
    )
    func namedSubmissionAttempts() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            let tan = try await harness.requestTAN(try await harness.registeredToken(guid: guid)).string("tan") ?? ""
            let attempt = UUID().uuidString.lowercased()
            let body = { (submission: String) in #"{"tan":"\#(tan)","event":false,"submission":"\#(submission)"}"# }
            let lookup = #"{"tanHash":"\#(SecretHash.sha256Hex(tan))"}"#

            let unused = try await harness.post(harness.internal, "/version/v1/tan/redemption", lookup)
            let first = try await harness.post(harness.internal, "/version/v1/tan/verify", body(attempt))
            let repeated = try await harness.post(harness.internal, "/version/v1/tan/verify", body(attempt))
            let other = try await harness.post(harness.internal, "/version/v1/tan/verify", body(UUID().uuidString))
            let unnamed = try await harness.verify(tan)
            let redeemed = try await harness.post(harness.internal, "/version/v1/tan/redemption", lookup)
            let unknown = try await harness.post(
                harness.internal,
                "/version/v1/tan/redemption",
                #"{"tanHash":"\#(SecretHash.sha256Hex(UUID().uuidString))"}"#
            )
            let malformed = try await harness.post(harness.internal, "/version/v1/tan/verify", body("not a uuid"))

            #expect(unused.status == .ok)
            #expect(try unused.json()["redeemed"] as? Bool == false)
            #expect(first.status == .ok)
            #expect(repeated.status == .ok)
            #expect(other.status == .gone)
            #expect(other.headers[Redemption.redeemedByHeader] == attempt)
            #expect(unnamed.status == .notFound, "a caller that names no attempt gets the reference's answer")
            #expect(redeemed.status == .ok)
            #expect(try redeemed.json()["redeemed"] as? Bool == true)
            #expect(try redeemed.string("redeemedBy") == attempt)
            #expect(unknown.status == .notFound)
            #expect(malformed.status == .badRequest)
        }
    }

    @Test("a teleTAN sent to /tan/verify is 400 (not a UUID)")
    func teleTANIsNotATAN() async throws {
        try await VerificationHarness.run { harness async throws in
            let teleTAN = try await harness.teleTAN()
            #expect(try await harness.verify(teleTAN).status == .badRequest)
        }
    }

    @Test("test-result-service unreachable: poll and TAN answer 503 and nothing changes")
    func upstreamDown() async throws {
        // Port 9 (discard) on loopback is closed on test machines: connections are refused at once.
        try await VerificationHarness.run(["TEST_RESULT_CONNECT_TIMEOUT": "200ms"], testResultURL: "http://127.0.0.1:9")
        { harness async throws in
            let token = try await harness.registeredToken(guid: TestIDs.hashedGUID())
            let poll = try await harness.poll(token)
            let tan = try await harness.requestTAN(token)

            #expect(poll.status == .serviceUnavailable)
            #expect(tan.status == .serviceUnavailable)
            #expect(tan.headers[.retryAfter] != nil)
            #expect(try await harness.count("tan") == 0)
            #expect(try await harness.count("app_session", where: "tan_counter = 0") == 1)
        }
    }
}
