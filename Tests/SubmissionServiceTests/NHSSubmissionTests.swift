// The NHS key submission and its dummies (nhs §4) through the router, over the recording key store.

import ENCrypto
import ENKeyStore
import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import SubmissionService

/// A payload of `count` keys of the days before `SubmissionPayloads.start` (the harness's clock).
func nhsPayload(token: String, count: Int = 3) -> ByteBuffer {
    let now10 = Int(SubmissionPayloads.start.timeIntervalSince1970) / 600
    let today = now10 / 144 * 144
    let keys = (0..<count).map { day -> [String: Any] in
        [
            "key": Data((0..<16).map { UInt8(($0 + day) & 0xFF) }).base64EncodedString(),
            "rollingStartNumber": today - 144 * (day + 1), "rollingPeriod": 144, "transmissionRiskLevel": 6,
        ]
    }
    let object: [String: Any] = ["diagnosisKeySubmissionToken": token, "temporaryExposureKeys": keys]
    return ByteBuffer(bytes: try! JSONSerialization.data(withJSONObject: object))
}

let nhsHeaders: HTTPFields = [
    .contentType: "application/json", .authorization: TestNHS.mobile.authorization, .nhsRequestID: "req-7",
]

@Suite("NHS key submission")
struct NHSSubmissionTests {
    /// The harness with NHS enabled and verification-service as the in-memory client of `verifier`.
    private func harness(
        _ verifier: InMemoryVerificationClient
    ) throws -> (any ApplicationProtocol, RecordingKeyRepository) {
        let configuration = try SubmissionFixture.configuration(TestNHS.settings())
        let store = RecordingKeyRepository()
        var dependencies = SubmissionDependencies.inMemory(
            verifier: verifier,
            keys: store,
            clock: WallClock { SubmissionPayloads.start }
        )
        dependencies.apiKeys = NHSAPIKeyVerifier(store: TestNHS.keyStore())
        let runtime = SubmissionRuntime(
            configuration: configuration,
            dependencies: dependencies,
            environment: .testing()
        )
        var nhs = runtime.nhsController
        nhs.sleep = { _ in }
        return (Application(router: try Submission.buildRouter(runtime, nhsController: nhs)), store)
    }

    private func verified(_ reply: RouterReply, path: String) throws {
        try TestNHS.verifier.verifyAnswer(
            signature: reply.headers[.amzMetaSignature],
            date: reply.headers[.amzMetaSignatureDate],
            requestID: "req-7",
            method: "POST",
            path: path,
            body: reply.body.readableBytesView
        )
    }

    @Test("a valid submission: 200, empty, signed; the keys stored with the kit's types; the token works once")
    func stored() async throws {
        let verifier = InMemoryVerificationClient()
        let token = UUID().uuidString
        await verifier.issueNHS(token, kit: .rapidSelfReported)
        let (app, store) = try self.harness(verifier)
        let reply = try await app.post(
            "/submission/diagnosis-keys",
            headers: nhsHeaders,
            body: nhsPayload(token: token)
        )
        #expect(reply.status == .ok)
        #expect(reply.body.readableBytes == 0)
        try self.verified(reply, path: "/submission/diagnosis-keys")
        let submission = try #require(store.stored.withLock { $0.first })
        #expect(submission.submissionType == "SUBMISSION_TYPE_SRS_SELF_TEST")
        #expect(submission.selfReport == nil)
        #expect(submission.consentToFederation == false)
        let real = submission.keys.filter { $0.transmissionRiskLevel == 7 }
        #expect(real.count == 3)
        #expect(real.allSatisfy { $0.reportType == "SELF_REPORT" && $0.daysSinceOnsetOfSymptoms == 0 })

        let again = try await app.post(
            "/submission/diagnosis-keys",
            headers: nhsHeaders,
            body: nhsPayload(token: token)
        )
        #expect(again.status == .ok)
        #expect(store.stored.withLock { $0.count } == 1)
    }

    @Test("an invalid body, too many keys or an unknown token: the same 200, nothing stored, the token not spent")
    func alwaysOK() async throws {
        let verifier = InMemoryVerificationClient()
        let token = UUID().uuidString
        await verifier.issueNHS(token, kit: .labResult)
        let (app, store) = try self.harness(verifier)
        for body in [
            ByteBuffer(string: "garbage"), nhsPayload(token: token, count: 15), nhsPayload(token: UUID().uuidString),
            nhsPayload(token: "not-a-uuid"),
        ] {
            let reply = try await app.post("/submission/diagnosis-keys", headers: nhsHeaders, body: body)
            #expect(reply.status == .ok)
            #expect(reply.body.readableBytes == 0)
            try self.verified(reply, path: "/submission/diagnosis-keys")
        }
        #expect(store.stored.withLock { $0.isEmpty })
        #expect(
            try await verifier.verifyNHSSubmissionToken(token, attempt: UUID()) == .valid(.labResult),
            "still usable"
        )
    }

    @Test(
        "the dummies: empty-submission answered like a real submission (signed, empty), v2 a plain empty 200; no key 403"
    )
    func dummies() async throws {
        let (app, store) = try self.harness(InMemoryVerificationClient())
        let real = try await app.post(
            "/submission/diagnosis-keys",
            headers: nhsHeaders,
            body: nhsPayload(token: UUID().uuidString)
        )
        let dummy = try await app.post(
            "/submission/empty-submission",
            headers: nhsHeaders,
            body: ByteBuffer(string: "{}")
        )
        #expect(dummy.status == real.status)
        #expect(dummy.body.readableBytes == 0)
        #expect(Set(dummy.headers.map(\.name)) == Set(real.headers.map(\.name)))
        try self.verified(dummy, path: "/submission/empty-submission")
        let v2 = try await app.test(.router) { client in
            try await client.execute(uri: "/submission/empty-submission-v2", method: .get)
        }
        #expect(v2.status == .ok)
        #expect(v2.body.readableBytes == 0)
        #expect(v2.headers[.contentType] == "text/plain")
        let refused = try await app.post(
            "/submission/diagnosis-keys",
            headers: [.contentType: "application/json"],
            body: nhsPayload(token: UUID().uuidString)
        )
        #expect(refused.status == .forbidden)
        #expect(refused.headers[.amzMetaSignature] == nil)
        #expect(store.stored.withLock { $0.isEmpty })
    }
}
