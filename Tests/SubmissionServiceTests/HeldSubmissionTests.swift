// Submissions held around the spending of their credential (Services/Submission/README.md, "Order of work"): a
// lost answer or a failed write after the TAN, token or OTP was spent loses no key: a retry after the recovery age,
// or the recovery, writes the attempt that spent it, once.

import ENKeyStore
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

@Suite("Held submissions")
struct HeldSubmissionTests {
    /// The router over in-memory peers and an in-memory key store whose `held_since` follows `clock`.
    struct Harness {
        let app: any ApplicationProtocol
        let runtime: SubmissionRuntime
        let keys: InMemoryDiagnosisKeyRepository
        let verifier: InMemoryVerificationClient
        let selfReports: InMemorySelfReportClient
        let clock: ManualClock

        init() throws {
            let clock = ManualClock(SubmissionPayloads.start)
            let keys = InMemoryDiagnosisKeyRepository(now: { clock.now })
            let verifier = InMemoryVerificationClient()
            let selfReports = InMemorySelfReportClient()
            var dependencies = SubmissionDependencies.inMemory(
                verifier: verifier,
                selfReports: selfReports,
                keys: keys,
                clock: WallClock { SubmissionPayloads.start }
            )
            dependencies.apiKeys = NHSAPIKeyVerifier(store: TestNHS.keyStore())
            let runtime = SubmissionRuntime(
                configuration: try SubmissionFixture.configuration(TestNHS.settings()),
                dependencies: dependencies,
                environment: .testing()
            )
            var nhs = runtime.nhsController
            nhs.sleep = { _ in }
            self.app = Application(router: try Submission.buildRouter(runtime, nhsController: nhs))
            self.runtime = runtime
            self.keys = keys
            self.verifier = verifier
            self.selfReports = selfReports
            self.clock = clock
        }

        func submit(tan: String) async throws -> RouterReply {
            try await self.app.post(
                "/version/v1/diagnosis-keys",
                headers: SubmissionPayloads.headers(tan: tan),
                body: ByteBuffer(bytes: try SubmissionPayloads.payload().serializedBytes() as [UInt8])
            )
        }

        /// Past the recovery age: every attempt held now counts as abandoned.
        func passRecoveryAge() {
            self.clock.advance(by: self.runtime.configuration.recovery.after / .seconds(1) + 1)
        }
    }

    @Test("a TAN whose answer was lost: 503; a retry at once is refused (the attempt may run); after the age it writes")
    func lostAnswerThenRetry() async throws {
        let harness = try Harness()
        let tan = UUID().uuidString.lowercased()
        await harness.verifier.issue(tan)
        await harness.verifier.loseNextAnswer()

        let lost = try await harness.submit(tan: tan)
        let early = try await harness.submit(tan: tan)
        harness.passRecoveryAge()
        let retried = try await harness.submit(tan: tan)
        let again = try await harness.submit(tan: tan)

        #expect(lost.status == .serviceUnavailable)
        #expect(early.status == .forbidden)
        #expect(retried.status == .ok)
        #expect(again.status == .forbidden)
        #expect(await harness.keys.storedKeys.count == 14, "the keys of the attempt that spent the TAN, once")
        #expect(try await harness.keys.heldAttempts(olderThan: .zero, limit: 10).isEmpty)
    }

    @Test(
        "an NHS token whose answer was lost: the app's retry gets the uniform 200; the recovery writes the keys with the kit"
    )
    func nhsLostAnswerRecovered() async throws {
        let harness = try Harness()
        let token = UUID().uuidString.lowercased()
        await harness.verifier.issueNHS(token, kit: .rapidResult)
        await harness.verifier.loseNextAnswer()

        let lost = try await harness.app.post(
            "/submission/diagnosis-keys",
            headers: nhsHeaders,
            body: nhsPayload(token: token)
        )
        let retried = try await harness.app.post(
            "/submission/diagnosis-keys",
            headers: nhsHeaders,
            body: nhsPayload(token: token)
        )
        #expect(lost.status == .serviceUnavailable)
        #expect(retried.status == .ok)
        #expect(await harness.keys.storedKeys.isEmpty, "the attempt that spent the token may still run")

        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome())
        harness.passRecoveryAge()
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(completed: 1))
        let stored = await harness.keys.storedKeys
        #expect(stored.count == 3)
        #expect(stored.allSatisfy { $0.submissionType == "SUBMISSION_TYPE_RAPID_TEST" && $0.fromNHSApp })
        #expect(stored.allSatisfy { $0.row.reportType == "CONFIRMED_TEST" })
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome())
    }

    @Test("verification-service away: 503, the attempt held; the recovery releases it once the TAN proves unused")
    func unreachableThenReleased() async throws {
        let harness = try Harness()
        let tan = UUID().uuidString.lowercased()
        await harness.verifier.issue(tan)
        await harness.verifier.setUnavailable(true)
        #expect(try await harness.submit(tan: tan).status == .serviceUnavailable)
        harness.passRecoveryAge()
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(deferred: 1))
        await harness.verifier.setUnavailable(false)
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(released: 1))
        #expect(await harness.keys.storedKeys.isEmpty)
        #expect(try await harness.submit(tan: tan).status == .ok, "the TAN was never spent")
    }
}
