// The real binaries: test-result-service and verification-service as processes, a GUID journey and a teleTAN
// journey over HTTP, then SIGTERM.

import AsyncHTTPClient
import ENCrypto
import ENPersistence
import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import Testing

@testable import TestResultService
@testable import VerificationService

@Suite("verification-service process", .postgres(VerificationMigrations.group, TestResultMigrations.group))
struct VerificationProcessTests {
    @Test("lab posts positive → register → poll → TAN → verify → verify again fails; teleTAN → TAN with its type")
    func journeys() async throws {
        let database = try PostgresTestDatabase.require()
        // Trace level: the most any operator could switch on, and where a leak would first show.
        var testResultEnvironment = database.processEnvironment
        testResultEnvironment["LOG_LEVEL"] = "trace"
        testResultEnvironment["SERVICE_CALLER_KEYS"] = TestServiceKeys.callerKeys(TestServiceKeys.testResultCallers)
        let testResult = try ServiceProcess.start(
            BuiltProduct.url("test-result-service"),
            environment: testResultEnvironment
        )
        defer { testResult.kill() }
        let labPort = try await testResult.waitForPort(listener: "lab")
        let testResultInternal = try await testResult.waitForPort(listener: "internal")
        var environment = database.processEnvironment
        environment["TEST_RESULT_INTERNAL_URL"] = "http://127.0.0.1:\(testResultInternal)"
        environment["TELETAN_JWT_PUBLIC_KEYS"] = TestSigningKeys.shared.publicPEM
        environment["TELETAN_PEPPER_FILE"] = TestKeyFiles.standard
        environment["SERVICE_TOKEN_KEY_FILE"] = TestServiceKeys.privateKeyFile("verification-service")
        environment["SERVICE_CALLER_KEYS"] = TestServiceKeys.callerKeys(TestServiceKeys.verificationCallers)
        environment["LOG_LEVEL"] = "trace"
        let verification = try ServiceProcess.start(BuiltProduct.url("verification-service"), environment: environment)
        defer { verification.kill() }
        let app = "http://127.0.0.1:\(try await verification.waitForPort(listener: "app"))/version/v1"
        let internalAPI = "http://127.0.0.1:\(try await verification.waitForPort(listener: "internal"))/version/v1"

        // GUID journey.
        let guid = TestIDs.hashedGUID()
        let lab = try await HTTP.post(
            "http://127.0.0.1:\(labPort)/api/v1/lab/results",
            json: #"{"labId":"lab-1","testResults":[{"id":"\#(guid)","result":2}]}"#
        )
        let registration = try await HTTP.post(
            "\(app)/registrationToken",
            json: VerificationBodies.registration(guid: guid)
        )
        let token = try Self.field("registrationToken", registration.body)
        let poll = try await HTTP.post("\(app)/testresult", json: VerificationBodies.token(token))
        let tanReply = try await HTTP.post("\(app)/tan", json: VerificationBodies.token(token))
        let tan = try Self.field("tan", tanReply.body)
        // The internal port admits only authenticated callers, each to its own routes.
        let anonymous = try await Self.send(
            "\(internalAPI)/tan/verify",
            body: VerificationBodies.tan(tan),
            caller: nil
        )
        let portalVerifying = try await Self.send(
            "\(internalAPI)/tan/verify",
            body: VerificationBodies.tan(tan),
            caller: "portal-service"
        )
        let verified = try await Self.send("\(internalAPI)/tan/verify", body: VerificationBodies.tan(tan))
        let again = try await Self.send("\(internalAPI)/tan/verify", body: VerificationBodies.tan(tan))

        // Refusals, where a careless implementation would log what it refused.
        let duplicate = try await HTTP.post(
            "\(app)/registrationToken",
            json: VerificationBodies.registration(guid: guid)
        )
        let unknownTAN = RandomUUID.generate()
        let unknown = try await Self.send("\(internalAPI)/tan/verify", body: VerificationBodies.tan(unknownTAN))

        // teleTAN journey.
        let jwt = TestJWT.es256(TestJWT.claims(roles: ["c19hotline"], now: Date()))
        let teleTANReply = try await Self.send(
            "\(internalAPI)/tan/teletan",
            body: nil,
            headers: ["Authorization": "Bearer \(jwt)"],
            caller: "portal-service"
        )
        let teleTAN = try Self.field("value", teleTANReply.body)
        let teleRegistration = try await HTTP.post(
            "\(app)/registrationToken",
            json: VerificationBodies.teleTANRegistration(teleTAN)
        )
        let teleToken = try Self.field("registrationToken", teleRegistration.body)
        let telePoll = try await HTTP.post("\(app)/testresult", json: VerificationBodies.token(teleToken))
        let teleTAN2 = try Self.field(
            "tan",
            try await HTTP.post("\(app)/tan", json: VerificationBodies.token(teleToken)).body
        )
        let teleVerified = try await Self.send("\(internalAPI)/tan/verify", body: VerificationBodies.tan(teleTAN2))

        verification.signal(SIGTERM)
        testResult.signal(SIGTERM)
        let verificationExit = try await verification.waitForExit()
        let testResultExit = try await testResult.waitForExit()

        #expect(lab.status == 204)
        #expect(registration.status == 201)
        #expect(poll.status == 200)
        #expect(poll.body.contains(#""testResult":2"#))
        #expect(poll.body.contains(#""labId":"lab-1""#))
        #expect(tanReply.status == 201)
        #expect(anonymous.status == 401)
        #expect(portalVerifying.status == 403)
        #expect(verified.status == 200)
        #expect(verified.teleTANType == nil)
        #expect(again.status == 404)
        #expect(teleTANReply.status == 201)
        #expect(teleRegistration.status == 201)
        #expect(telePoll.body.contains(#""testResult":2"#))
        #expect(teleVerified.status == 200)
        #expect(teleVerified.teleTANType == "TEST")
        #expect(verificationExit == 0)
        #expect(testResultExit == 0)
        // Secrets never reach the logs.
        #expect(duplicate.status == 400)
        #expect(unknown.status == 404)
        let secrets = [guid, token, tan, teleTAN, teleToken, teleTAN2, jwt, unknownTAN]
        for secret in secrets + secrets.map(SecretHash.sha256Hex) {
            #expect(!verification.output.contains(secret))
            #expect(!testResult.output.contains(secret))
        }
    }

    @Test("--help lists the settings; a bad configuration exits 2 naming every problem")
    func configuration() async throws {
        let help = try ServiceProcess.start(
            BuiltProduct.url("verification-service"),
            arguments: ["--help"],
            environment: [:]
        )
        let helpStatus = try await help.waitForExit()
        let bad = try ServiceProcess.start(
            BuiltProduct.url("verification-service"),
            environment: ["DATABASE_URL": "postgres://u:hunter2@127.0.0.1:1/db", "TAN_VALIDITY": "soon"]
        )
        let badStatus = try await bad.waitForExit()

        #expect(helpStatus == 0)
        for setting in [
            "TELETAN_JWT_PUBLIC_KEYS", "TELETAN_PEPPER_FILE", "TAN_PER_REGISTRATION_TOKEN", "TEST_RESULT_INTERNAL_URL",
            "SERVICE_TOKEN_KEY_FILE", "SERVICE_CALLER_KEYS", "--teletan-rate-limit",
        ] {
            #expect(help.output.contains(setting))
        }
        #expect(badStatus == 2)
        #expect(bad.output.contains("TAN_VALIDITY"))
        #expect(bad.output.contains("TELETAN_JWT_PUBLIC_KEYS"))
        #expect(bad.output.contains("TELETAN_PEPPER_FILE"))
        #expect(bad.output.contains("SERVICE_CALLER_KEYS"))
        #expect(!bad.output.contains("hunter2"))
    }

    private static func field(_ name: String, _ body: String) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        guard let value = object?[name] as? String else { throw HarnessError("no \(name) in \(body)") }
        return value
    }

    private static func send(
        _ url: String,
        body: String?,
        headers: [String: String] = [:],
        caller: String? = "submission-service"
    ) async throws -> (status: UInt, body: String, teleTANType: String?) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let caller {
            let (name, value) = TestServiceKeys.pair(caller, for: "verification-service")
            request.headers.add(name: name, value: value)
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 16))
        return (response.status.code, text, response.headers.first(name: "X-CWA-TELETAN-TYPE"))
    }
}
