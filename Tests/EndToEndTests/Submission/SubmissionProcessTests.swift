// The real binaries: test-result-, verification- and submission-service as processes, a lab result through to
// stored keys over HTTP, a dummy beside it, then SIGTERM.

import AsyncHTTPClient
import Crypto
import ENCrypto
import ENKeyStore
import ENModels
import ENPersistence
import ENTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import SubmissionService
@testable import TestResultService
@testable import VerificationService

@Suite(
    "submission-service process",
    .postgres(TestResultMigrations.group, VerificationMigrations.group, KeyStoreMigrations.group)
)
struct SubmissionProcessTests {
    @Test("lab result → registration → TAN → 14 keys stored and mirrored; a dummy stores nothing; the TAN works once")
    func journey() async throws {
        let database = try PostgresTestDatabase.require()
        // Trace level: the most any operator could switch on, and where a leak would first show.
        var environment = database.processEnvironment
        environment["LOG_LEVEL"] = "trace"
        environment["SERVICE_CALLER_KEYS"] = TestServiceKeys.callerKeys(TestServiceKeys.testResultCallers)
        let testResult = try ServiceProcess.start(BuiltProduct.url("test-result-service"), environment: environment)
        defer { testResult.kill() }
        let labPort = try await testResult.waitForPort(listener: "lab")
        environment["TEST_RESULT_INTERNAL_URL"] =
            "http://127.0.0.1:\(try await testResult.waitForPort(listener: "internal"))"
        environment["TELETAN_JWT_PUBLIC_KEYS"] = P256.Signing.PrivateKey().publicKey.pemRepresentation
        environment["TELETAN_PEPPER_FILE"] = TestKeyFiles.standard
        environment["SERVICE_TOKEN_KEY_FILE"] = TestServiceKeys.privateKeyFile("verification-service")
        environment["SERVICE_CALLER_KEYS"] = TestServiceKeys.callerKeys(TestServiceKeys.verificationCallers)
        let verification = try ServiceProcess.start(BuiltProduct.url("verification-service"), environment: environment)
        defer { verification.kill() }
        let app = "http://127.0.0.1:\(try await verification.waitForPort(listener: "app"))/version/v1"
        environment["VERIFICATION_INTERNAL_URL"] =
            "http://127.0.0.1:\(try await verification.waitForPort(listener: "internal"))"
        environment["SERVICE_TOKEN_KEY_FILE"] = TestServiceKeys.privateKeyFile("submission-service")
        let submission = try ServiceProcess.start(BuiltProduct.url("submission-service"), environment: environment)
        defer { submission.kill() }
        let submit = "http://127.0.0.1:\(try await submission.waitForPort(listener: "app"))/version/v1/diagnosis-keys"

        let guid = TestIDs.hashedGUID()
        let lab = try await HTTP.post(
            "http://127.0.0.1:\(labPort)/api/v1/lab/results",
            json: #"{"labId":"lab-1","testResults":[{"id":"\#(guid)","result":2}]}"#
        )
        let token = try Self.field(
            "registrationToken",
            try await HTTP.post("\(app)/registrationToken", json: #"{"key":"\#(guid)","keyType":"GUID"}"#).body
        )
        let tan = try Self.field(
            "tan",
            try await HTTP.post("\(app)/tan", json: #"{"registrationToken":"\#(token)"}"#).body
        )

        // Keys for the days before the real today: the binary runs on the system clock.
        var payload = SubmissionPayloads.payload()
        let today = EpochIntervals.midnightInterval(Date())
        for index in payload.keys.indices {
            payload.keys[index].rollingStartIntervalNumber = Int32(today - (index + 1) * 144)
        }
        let dummy = try await Self.post(submit, payload, fake: "1", tan: RandomUUID.generate())
        let rowsAfterDummy = try await database.count("diagnosis_key")
        let real = try await Self.post(submit, payload, fake: "0", tan: tan)
        let again = try await Self.post(submit, payload, fake: "0", tan: tan)

        for process in [submission, verification, testResult] { process.signal(SIGTERM) }
        let exits = [
            try await submission.waitForExit(), try await verification.waitForExit(),
            try await testResult.waitForExit(),
        ]

        #expect(lab.status == 204)
        #expect(dummy.status == 200)
        #expect(rowsAfterDummy == 0)
        #expect(real.status == 200)
        #expect(real.body == 0 && dummy.body == 0)
        #expect(real.headers == dummy.headers)
        #expect(again.status == 403)
        #expect(try await database.count("diagnosis_key") == 14)
        #expect(try await database.count("federation_upload_key") == 14)
        #expect(exits == [0, 0, 0])
        let secrets = [tan, token, guid] + payload.keys.map { Hex.encode($0.keyData) }
        for secret in secrets {
            #expect(!submission.output.contains(secret))
            #expect(!verification.output.contains(secret))
        }
    }

    @Test("--help lists the settings; a bad configuration exits 2 naming every problem")
    func configuration() async throws {
        let help = try ServiceProcess.start(
            BuiltProduct.url("submission-service"),
            arguments: ["--help"],
            environment: [:]
        )
        let bad = try ServiceProcess.start(
            BuiltProduct.url("submission-service"),
            environment: [
                "DATABASE_URL": "postgres://u:hunter2@127.0.0.1:1/db", "MAX_NUMBER_OF_KEYS": "many",
                "ORIGIN_COUNTRY": "Germany",
            ]
        )
        #expect(try await help.waitForExit() == 0)
        #expect(try await bad.waitForExit() == 2)
        for setting in [
            "MAX_REQUEST_BYTES", "VERIFICATION_INTERNAL_URL", "RANDOM_KEY_PADDING_MULTIPLIER",
            "--unencrypted-checkins-enabled",
        ] {
            #expect(help.output.contains(setting))
        }
        #expect(bad.output.contains("MAX_NUMBER_OF_KEYS") && bad.output.contains("ORIGIN_COUNTRY"))
        #expect(!bad.output.contains("hunter2"))
    }

    private static func field(_ name: String, _ body: String) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return try #require(object?[name] as? String, "no \(name) in \(body)")
    }

    /// A protobuf submission; the answer's status, body length and headers other than date and request id.
    private static func post(
        _ url: String,
        _ payload: SubmissionPayload,
        fake: String,
        tan: String
    ) async throws -> (status: UInt, body: Int, headers: [String]) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-protobuf")
        request.headers.add(name: "cwa-fake", value: fake)
        request.headers.add(name: "cwa-authorization", value: tan)
        request.body = .bytes(payload.bytes)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 16)
        let headers = response.headers.filter { !["date", "x-request-id"].contains($0.name.lowercased()) }.map {
            "\($0.name): \($0.value)"
        }.sorted()
        return (response.status.code, body.readableBytes, headers)
    }
}
