// Headers, content type, size limit and dummy requests, on the router over recording fakes.

import ENKeyStore
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SwiftProtobuf
import Testing

@testable import SubmissionService

@Suite("Requests")
struct RequestTests {
    static let tan = "3d7f1d8f-8f0e-4a43-9f0f-6d3c2b8c1a11"

    @Test(
        "missing or non-integer cwa-fake, a cwa-otp, both authorisations or none: 400, empty, without verifying anything"
    )
    func headers() async throws {
        let harness = try SubmissionRouterHarness()
        let body = SubmissionPayloads.payload().bytes
        var noFake = SubmissionPayloads.headers(tan: Self.tan)
        noFake[SubmissionController.fakeHeader] = nil
        var otp = SubmissionPayloads.headers()
        otp[SubmissionController.otpHeader] = Self.tan
        var both = SubmissionPayloads.headers(tan: Self.tan)
        both[SubmissionController.otpHeader] = Self.tan
        for headers in [
            noFake, otp, both, SubmissionPayloads.headers(), SubmissionPayloads.headers(tan: Self.tan, fake: "true"),
        ] {
            let reply = try await harness.post(body, headers: headers)
            #expect(reply.status == .badRequest)
            #expect(reply.body.readableBytes == 0)
        }
        #expect(harness.verifier.calls.withLock { $0 } == 0)
    }

    @Test("a body that is not a protobuf message: 400; another content type: 415")
    func bodies() async throws {
        let harness = try SubmissionRouterHarness()
        let garbage = try await harness.post(
            ByteBuffer(bytes: [0xFF, 0xFF, 0xFF]),
            headers: SubmissionPayloads.headers(tan: Self.tan)
        )
        #expect(garbage.status == .badRequest)
        #expect(garbage.body.readableBytes == 0)
        let metrics = try await harness.app.test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get).body.text
        }
        #expect(metrics.contains(#"en_submission_rejected_total{endpoint="diagnosis_keys",rule="protobuf"} 1"#))
        var json = SubmissionPayloads.headers(tan: Self.tan)
        json[.contentType] = "application/json"
        #expect(
            try await harness.post(SubmissionPayloads.payload().bytes, headers: json).status == .unsupportedMediaType
        )
        #expect(harness.verifier.calls.withLock { $0 } == 0)
    }

    @Test("a body over MAX_REQUEST_BYTES gets 413, real or fake")
    func sizeLimit() async throws {
        let harness = try SubmissionRouterHarness(["MAX_REQUEST_BYTES": "1000"])
        var payload = SubmissionPayloads.payload()
        payload.requestPadding = Data(count: 2000)
        #expect(
            try await harness.post(payload.bytes, headers: SubmissionPayloads.headers(tan: Self.tan)).status
                == .contentTooLarge
        )
        #expect(
            try await harness.post(payload.bytes, headers: SubmissionPayloads.headers(fake: "1")).status
                == .contentTooLarge
        )
        #expect(harness.store.stored.withLock { $0.isEmpty })
    }

    @Test("a database that cannot be reached: 503 with Retry-After, and the TAN is not sent to verification")
    func databaseDown() async throws {
        let harness = try SubmissionRouterHarness(databaseDown: true)
        let reply = try await harness.post(
            SubmissionPayloads.payload().bytes,
            headers: SubmissionPayloads.headers(tan: Self.tan)
        )
        #expect(reply.status == .serviceUnavailable)
        #expect(reply.headers[.retryAfter] == "30")
        #expect(harness.verifier.calls.withLock { $0 } == 0)
    }

    @Test("a real submission stores what it prepared and answers the check-in counts")
    func realSubmission() async throws {
        let harness = try SubmissionRouterHarness()
        var payload = SubmissionPayloads.payload(keys: 5)
        payload.checkInProtectedReports = [SubmissionPayloads.protectedReport()]
        let reply = try await harness.post(payload.bytes, headers: SubmissionPayloads.headers(tan: Self.tan))
        #expect(reply.status == .ok)
        #expect(reply.headers[SubmissionController.savedCheckInsHeader] == "001")
        #expect(harness.verifier.calls.withLock { $0 } == 1)
        #expect(harness.store.stored.withLock { $0.first?.keys.count } == 5)
    }

    @Test(
        "a fake request verifies nothing, stores nothing, and answers what a real success answers",
        arguments: ["1", "2", " -1 "]
    )
    func fakeRequest(_ value: String) async throws {
        let harness = try SubmissionRouterHarness()
        let real = try await harness.post(
            SubmissionPayloads.payload().bytes,
            headers: SubmissionPayloads.headers(tan: Self.tan)
        )
        let calls = harness.verifier.calls.withLock { $0 }
        let stored = harness.store.stored.withLock { $0.count }

        // A fake's body is not even read as a payload: phones send padding-only dummies.
        var dummy = SubmissionPayload()
        dummy.requestPadding = Data(count: 500)
        let fake = try await harness.post(dummy.bytes, headers: SubmissionPayloads.headers(tan: Self.tan, fake: value))
        #expect(harness.verifier.calls.withLock { $0 } == calls)
        #expect(harness.store.stored.withLock { $0.count } == stored)

        #expect(fake.status == real.status)
        #expect(Array(fake.body.readableBytesView) == Array(real.body.readableBytesView))
        let names = { (reply: Reply) in
            reply.headers.filter { $0.name != .init("x-request-id")! }.map { "\($0.name): \($0.value)" }.sorted()
        }
        #expect(names(fake) == names(real))
        #expect(!names(fake).isEmpty)
    }

    @Test("a fake request waits a delay drawn around the real durations of its own endpoint")
    func fakeDelay() async throws {
        let harness = try SubmissionRouterHarness(["FAKE_DELAY_INITIAL": "10ms"])
        // The longest delay there is (FakeDelay.maximum): however long a loaded machine takes over the request, some
        // of it is left to sleep.
        for _ in 0..<200 { harness.runtime.delays[.onBehalf]?.record(FakeDelay.maximum) }
        let started = ContinuousClock.now
        _ = try await harness.post(
            nil,
            path: "/version/v1/submission-on-behalf",
            headers: SubmissionPayloads.headers(fake: "1")
        )
        let took = ContinuousClock.now - started
        let onBehalf = harness.sleeps.withLock { $0 }
        _ = try await harness.post(nil, headers: SubmissionPayloads.headers(fake: "1"))
        let keys = harness.sleeps.withLock { $0 }.dropFirst(onBehalf.count)
        #expect(onBehalf.count <= 1 && keys.count <= 1, "\(onBehalf), \(keys)")
        // The on-behalf dummy waits 10 s less the time since its head arrived (the sleeps are only recorded here, so
        // that time is at most what the whole request took); a machine so loaded that the request took 10 s itself
        // leaves nothing to sleep, less the lateness allowance of at most 5 ms. The key dummy waits around 10 ms (or
        // not at all when its body took longer).
        if let slept = onBehalf.first {
            #expect(slept >= FakeDelay.maximum - took && slept <= FakeDelay.maximum, "\(slept), took \(took)")
        } else {
            #expect(took >= FakeDelay.maximum - .milliseconds(5), "no sleep, took \(took)")
        }
        #expect(keys.allSatisfy { $0 < .milliseconds(200) })
    }

    @Test("the real submissions' durations move the estimate, and it is exported as a gauge")
    func estimateMoves() async throws {
        // From an estimate of (nearly) nothing, which a real submission raises however fast or loaded the machine:
        // recorded zeros move the average down to under 10 µs, and a submission takes longer than twice that.
        let harness = try SubmissionRouterHarness(["FAKE_DELAY_INITIAL": "10ms"])
        let delay = try #require(harness.runtime.delays[.diagnosisKeys])
        for _ in 0..<100 { delay.record(.zero) }
        let before = delay.average
        _ = try await harness.post(
            SubmissionPayloads.payload().bytes,
            headers: SubmissionPayloads.headers(tan: Self.tan)
        )
        #expect(before < .microseconds(10))
        #expect(delay.average > before)
        let text = try await harness.app.test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get).body.text
        }
        #expect(text.contains(#"en_submission_fake_delay_seconds{endpoint="diagnosis_keys"}"#))
        #expect(text.contains(#"en_submission_requests_total{endpoint="diagnosis_keys",kind="real"} 1"#))
    }

    @Test("refused TANs do not feed the estimate: a flood of random TANs leaves the dummies' delay where it was")
    func refusedTANsDoNotMoveEstimate() async throws {
        let harness = try SubmissionRouterHarness(["FAKE_DELAY_INITIAL": "5s"], verdict: .rejected)
        let before = try #require(harness.runtime.delays[.diagnosisKeys]?.average)

        for _ in 0..<20 {
            let reply = try await harness.post(
                SubmissionPayloads.payload().bytes,
                headers: SubmissionPayloads.headers(tan: UUID().uuidString.lowercased())
            )
            #expect(reply.status == .forbidden)
        }

        #expect(harness.runtime.delays[.diagnosisKeys]?.average == before)
        #expect(harness.verifier.calls.withLock { $0 } == 20)
    }

    @Test("a real answer with 12 saved check-ins has the headers of a dummy's, byte for byte in length")
    func answerLengthsMatch() async throws {
        let harness = try SubmissionRouterHarness()
        var payload = SubmissionPayloads.payload()
        payload.checkInProtectedReports = (0..<12).map { _ in SubmissionPayloads.protectedReport() }
        let real = try await harness.post(payload.bytes, headers: SubmissionPayloads.headers(tan: Self.tan))
        let fake = try await harness.post(nil, headers: SubmissionPayloads.headers(fake: "1"))
        let length = { (reply: Reply) in
            reply.headers.filter { $0.name != .init("x-request-id")! }.map { $0.name.rawName.count + $0.value.count }
                .reduce(0, +)
        }

        #expect(real.status == .ok)
        #expect(real.headers[SubmissionController.savedCheckInsHeader] == "012")
        #expect(fake.headers[SubmissionController.savedCheckInsHeader] == "000")
        #expect(length(real) == length(fake))
        #expect(SubmissionController.fixedWidth(7) == "007" && SubmissionController.fixedWidth(280) == "280")
    }

    @Test("more check-ins than MAX_CHECKINS_PER_SUBMISSION, of either kind: 400, nothing verified")
    func tooManyCheckIns() async throws {
        let harness = try SubmissionRouterHarness(["MAX_CHECKINS_PER_SUBMISSION": "3"])
        var encrypted = SubmissionPayloads.payload()
        encrypted.checkInProtectedReports = (0..<4).map { _ in SubmissionPayloads.protectedReport() }
        var plain = SubmissionPayloads.payload()
        plain.checkIns = (0..<4).map { SubmissionPayloads.checkIn(location: UInt8($0 + 1)) }
        var atLimit = SubmissionPayloads.payload()
        atLimit.checkInProtectedReports = (0..<3).map { _ in SubmissionPayloads.protectedReport() }

        let refusedEncrypted = try await harness.post(
            encrypted.bytes,
            headers: SubmissionPayloads.headers(tan: Self.tan)
        )
        let refusedPlain = try await harness.post(plain.bytes, headers: SubmissionPayloads.headers(tan: Self.tan))
        #expect(harness.verifier.calls.withLock { $0 } == 0)
        let accepted = try await harness.post(atLimit.bytes, headers: SubmissionPayloads.headers(tan: Self.tan))

        #expect(refusedEncrypted.status == .badRequest)
        #expect(refusedPlain.status == .badRequest)
        #expect(accepted.status == .ok)
    }

    @Test("dummies are served concurrently: 200 of them are waiting at the same time", .timeLimit(.minutes(1)))
    func concurrentDummies() async throws {
        // Each dummy's wait returns only once all 200 are waiting: served one after another, they would never finish.
        let barrier = Barrier(parties: 200)
        let base = try SubmissionRouterHarness(["FAKE_DELAY_INITIAL": "5s"])
        var controller = base.runtime.controller
        controller.sleep = { _ in await barrier.arrive() }
        let app = Application(router: try Submission.buildRouter(base.runtime, controller: controller))
        let statuses = try await app.test(.router) { client in
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        try await client.execute(
                            uri: "/version/v1/diagnosis-keys",
                            method: .post,
                            headers: SubmissionPayloads.headers(fake: "1")
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(statuses.count == 200 && statuses.allSatisfy { $0 == .ok })
    }

    @Test("payloads with random bytes changed never crash the service nor get a 5xx: 200 or 400")
    func mutatedPayloads() async throws {
        let harness = try SubmissionRouterHarness([
            "UNENCRYPTED_CHECKINS_ENABLED": "true", "RANDOM_CHECKINS_PADDING_MULTIPLIER": "3",
        ])
        var payload = SubmissionPayloads.payload(keys: 4)
        payload.checkIns = [SubmissionPayloads.checkIn(location: 1), SubmissionPayloads.checkIn(location: 2)]
        payload.checkInProtectedReports = [SubmissionPayloads.protectedReport()]
        let valid: [UInt8] = try payload.serializedBytes()
        var generator = SeededGenerator(seed: 42)
        var statuses: [Int: Int] = [:]
        for _ in 0..<300 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            let reply = try await harness.post(
                ByteBuffer(bytes: bytes),
                headers: SubmissionPayloads.headers(tan: Self.tan)
            )
            statuses[Int(reply.status.code), default: 0] += 1
        }
        #expect(Set(statuses.keys).isSubset(of: [200, 400]), "\(statuses)")
        #expect(statuses[400, default: 0] > 0)
    }

    @Test(
        "TAN header forms",
        arguments: [
            ("3D7F1D8F-8F0E-4A43-9F0F-6D3C2B8C1A11", "3d7f1d8f-8f0e-4a43-9f0f-6d3c2b8c1a11"),
            (" TAN 3d7f1d8f-8f0e-4a43-9f0f-6d3c2b8c1a11 ", "3d7f1d8f-8f0e-4a43-9f0f-6d3c2b8c1a11"),
            ("tan 3d7f1d8f-8f0e-4a43-9f0f-6d3c2b8c1a11", "3d7f1d8f-8f0e-4a43-9f0f-6d3c2b8c1a11"),
            ("TAN", nil), ("3d7f1d8f8f0e4a439f0f6d3c2b8c1a11", nil),
            ("Bearer 3d7f1d8f-8f0e-4a43-9f0f-6d3c2b8c1a11", nil),
        ] as [(String, String?)]
    )
    func tanForms(_ header: String, _ expected: String?) {
        #expect(TANHeader.parse(header) == expected)
    }
}

/// Suspends callers until `parties` of them have arrived, then releases them all.
actor Barrier {
    private let parties: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(parties: Int) {
        self.parties = parties
    }

    func arrive() async {
        if self.waiting.count + 1 >= self.parties {
            for continuation in self.waiting { continuation.resume() }
            self.waiting.removeAll()
            return
        }
        await withCheckedContinuation { self.waiting.append($0) }
    }
}
