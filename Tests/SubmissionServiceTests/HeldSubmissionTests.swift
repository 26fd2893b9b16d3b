// Submissions held around the spending of their credential (Services/Submission/README.md, "Order of work"): a
// lost answer or a failed write after the TAN, token or OTP was spent loses no key: a retry after the recovery age,
// or the recovery, writes the attempt that spent it, once.

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
import SwiftProtobuf
import Testing

@testable import SubmissionService

@Suite("Held submissions")
struct HeldSubmissionTests {
    /// The router over in-memory peers and an in-memory key store, on `clock`.
    struct Harness {
        let app: any ApplicationProtocol
        let runtime: SubmissionRuntime
        let keys: InMemoryDiagnosisKeyRepository
        let verifier: InMemoryVerificationClient
        let selfReports: InMemorySelfReportClient
        let clock: ManualClock

        init() throws {
            let clock = ManualClock(SubmissionPayloads.start)
            let keys = InMemoryDiagnosisKeyRepository()
            let verifier = InMemoryVerificationClient()
            let selfReports = InMemorySelfReportClient()
            var dependencies = SubmissionDependencies.inMemory(
                verifier: verifier,
                selfReports: selfReports,
                keys: keys,
                clock: clock.wallClock
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
            self.clock.advance(by: self.policy.after / .seconds(1) + 1)
        }

        var policy: RecoveryPolicy { self.runtime.configuration.recovery }

        func heldCount() async throws -> Int {
            try await self.keys.heldAttemptCount().count
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
        #expect(early.status == .forbidden, "the attempt that spent the TAN may still be writing")
        #expect(retried.status == .ok)
        #expect(again.status == .forbidden)
        #expect(await harness.keys.storedKeys.count == 14, "the keys of the attempt that spent the TAN, once")
        #expect(try await harness.heldCount() == 0)
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

    @Test(
        "verification-service away: 503, the attempt held; once it answers, the unspent TAN's attempt waits out the release age, then goes"
    )
    func unreachableThenReleased() async throws {
        let harness = try Harness()
        let tan = UUID().uuidString.lowercased()
        await harness.verifier.issue(tan)
        await harness.verifier.setUnavailable(true)
        #expect(try await harness.submit(tan: tan).status == .serviceUnavailable)
        harness.passRecoveryAge()
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(deferred: 1))
        await harness.verifier.setUnavailable(false)
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(), "postponed by a pass")
        harness.clock.advance(by: harness.policy.interval / .seconds(1))
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(waiting: 1))
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(), "until the release age")
        harness.clock.advance(by: harness.policy.releaseAfter / .seconds(1))
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(released: 1))
        #expect(await harness.keys.storedKeys.isEmpty)
        #expect(try await harness.heldCount() == 0)
        #expect(try await harness.submit(tan: tan).status == .ok, "the TAN was never spent")
    }

    @Test(
        "an attempt whose TAN is unspent is kept while the spending may land; a submission with the TAN meanwhile lets it go"
    )
    func unspentAttemptKeptUntilReleaseAge() async throws {
        let harness = try Harness()
        let tan = UUID().uuidString.lowercased()
        await harness.verifier.issue(tan)
        await harness.verifier.setUnavailable(true)
        #expect(try await harness.submit(tan: tan).status == .serviceUnavailable)
        await harness.verifier.setUnavailable(false)
        harness.passRecoveryAge()
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(waiting: 1))
        #expect(try await harness.heldCount() == 1)

        #expect(try await harness.submit(tan: tan).status == .ok)
        #expect(try await harness.heldCount() == 0, "the write lets go of every attempt of its TAN")
        #expect(await harness.keys.storedKeys.count == 14)
        harness.clock.advance(by: harness.policy.releaseAfter / .seconds(1))
        #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome())
    }

    @Test("a spending answered as spent by the attempt itself (a repeat whose first answer was lost) writes the keys")
    func spentByItself() async throws {
        let harness = try Harness()
        let tan = UUID().uuidString.lowercased()
        await harness.verifier.issue(tan)
        await harness.verifier.answerNextAsRepeat()
        #expect(try await harness.submit(tan: tan).status == .ok)
        #expect(await harness.keys.storedKeys.count == 14)

        let token = UUID().uuidString.lowercased()
        await harness.verifier.issueNHS(token, kit: .rapidResult)
        await harness.verifier.answerNextAsRepeat()
        let nhs = try await harness.app.post(
            "/submission/diagnosis-keys",
            headers: nhsHeaders,
            body: nhsPayload(token: token)
        )
        #expect(nhs.status == .ok)
        let stored = await harness.keys.storedKeys.filter(\.fromNHSApp)
        #expect(stored.count == 3)
        #expect(stored.allSatisfy { $0.submissionType == "SUBMISSION_TYPE_RAPID_TEST" }, "typed by the order's kit")
        #expect(try await harness.heldCount() == 0)
    }

    @Test("an attempt the recovery cannot resolve is postponed: it never keeps the next ones waiting")
    func stuckAttemptPostponed() async throws {
        let harness = try Harness()
        var policy = harness.policy
        policy.batch = 1
        let recovery = SubmissionRecovery(
            policy: policy,
            keys: harness.keys,
            verifier: harness.verifier,
            selfReports: harness.selfReports,
            clock: harness.clock.wallClock,
            metrics: harness.runtime.recovery.metrics,
            logger: harness.runtime.recovery.logger
        )
        // An attempt that spent its TAN, with a draft this version cannot read.
        let stuckTAN = UUID().uuidString.lowercased()
        await harness.verifier.issue(stuckTAN)
        let stuck = HeldAttempt(
            id: UUID(),
            credential: .tan,
            credentialHash: SecretHash.sha256Hex(stuckTAN),
            draft: Array("not a draft".utf8),
            heldSince: harness.clock.now,
            due: harness.clock.now
        )
        _ = try await harness.keys.hold(stuck, selfReport: nil)
        _ = try await harness.verifier.verify(stuckTAN, event: false, attempt: stuck.id)
        // Then a submission whose answer was lost.
        let tan = UUID().uuidString.lowercased()
        await harness.verifier.issue(tan)
        await harness.verifier.loseNextAnswer()
        #expect(try await harness.submit(tan: tan).status == .serviceUnavailable)
        harness.passRecoveryAge()

        #expect(try await recovery.run() == SubmissionRecovery.Outcome(deferred: 1))
        #expect(try await recovery.run() == SubmissionRecovery.Outcome(completed: 1))
        #expect(await harness.keys.storedKeys.count == 14)
        #expect(try await harness.heldCount() == 1, "the unreadable one stays held, for an operator")
    }
}
