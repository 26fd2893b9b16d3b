// Real submissions against real verification and test-result services on a real database.

import ENCrypto
import ENKeyStore
import ENModels
import ENPersistence
import ENTestSupport
import Foundation
import HTTPTypes
import InMemoryLogging
import Logging
import PostgresNIO
import Testing

@testable import SubmissionService
@testable import TestResultService
@testable import VerificationService

@Suite("Submissions", .postgres(TestResultMigrations.group, VerificationMigrations.group, KeyStoreMigrations.group))
struct SubmissionTests {
    @Test("a lab TAN submits 14 keys: 200, the keys, their federation mirror, and the TAN is used up")
    func happyPath() async throws {
        try await SubmissionHarness.run { harness async throws in
            let tan = try await harness.labTAN()
            var payload = SubmissionPayloads.payload()
            payload.keys[0].clearTransmissionRiskLevel()
            payload.keys[0].daysSinceOnsetOfSymptoms = 0
            payload.checkInProtectedReports = [
                SubmissionPayloads.protectedReport(), SubmissionPayloads.protectedReport(),
            ]
            let reply = try await harness.submit(payload, tan: tan)
            #expect(reply.status == .ok)
            #expect(reply.body.readableBytes == 0)
            #expect(reply.headers[SubmissionController.savedCheckInsHeader] == "002")
            #expect(reply.headers[SubmissionController.filteredCheckInsHeader] == "000")
            #expect(reply.headers[.contentSecurityPolicy] == "default-src 'self'")
            #expect(try await harness.count("diagnosis_key") == 14)
            #expect(
                try await harness.count(
                    "diagnosis_key",
                    where: "submission_type = 'SUBMISSION_TYPE_PCR_TEST' AND origin_country = 'DE'"
                ) == 14
            )
            #expect(try await harness.count("diagnosis_key", where: "visited_countries = ARRAY['DE','FR']") == 14)
            #expect(
                try await harness.count(
                    "diagnosis_key",
                    where: "days_since_onset_of_symptoms = 0 AND transmission_risk_level = 8"
                ) == 1
            )
            #expect(
                try await harness.count(
                    "diagnosis_key",
                    where: "submission_timestamp = \(EpochIntervals.hour(SubmissionPayloads.start))"
                ) == 14
            )
            #expect(try await harness.count("federation_upload_key", where: "batch_tag IS NULL") == 14)
            #expect(try await harness.count("check_in_protected_reports") == 2)

            let again = try await harness.submit(SubmissionPayloads.payload(), tan: tan)
            #expect(again.status == .forbidden)
            #expect(try await harness.count("diagnosis_key") == 14)
        }
    }

    @Test("the documented 'TAN <uuid>' header form is accepted like the bare UUID")
    func tanPrefix() async throws {
        try await SubmissionHarness.run { harness async throws in
            let tan = try await harness.labTAN()
            let reply = try await harness.submit(SubmissionPayloads.payload(keys: 3), tan: "TAN " + tan.uppercased())
            #expect(reply.status == .ok)
            #expect(try await harness.count("diagnosis_key") == 3)
        }
    }

    @Test("an unknown TAN or one that is no UUID gets 403 and nothing is stored")
    func unknownTAN() async throws {
        try await SubmissionHarness.run { harness async throws in
            #expect(
                try await harness.submit(SubmissionPayloads.payload(), tan: RandomUUID.generate()).status == .forbidden
            )
            #expect(try await harness.submit(SubmissionPayloads.payload(), tan: "not-a-uuid").status == .forbidden)
            #expect(try await harness.storedRows() == 0)
        }
    }

    @Test("a TAN sent to the endpoint of the other kind is refused and stays usable where it belongs")
    func wrongKindKeepsTAN() async throws {
        try await SubmissionHarness.run { harness async throws in
            let event = try await harness.teleTANTAN(.event)
            let test = try await harness.teleTANTAN(.test)

            let eventAtKeys = try await harness.submit(SubmissionPayloads.payload(), tan: event)
            let testOnBehalf = try await harness.submit(
                SubmissionPayloads.onBehalfPayload(),
                tan: test,
                path: "/version/v1/submission-on-behalf"
            )
            let eventOnBehalf = try await harness.submit(
                SubmissionPayloads.onBehalfPayload(),
                tan: event,
                path: "/version/v1/submission-on-behalf"
            )
            let testAtKeys = try await harness.submit(SubmissionPayloads.payload(), tan: test)

            #expect(eventAtKeys.status == .forbidden)
            #expect(testOnBehalf.status == .forbidden)
            #expect(eventOnBehalf.status == .ok)
            #expect(testAtKeys.status == .ok)
        }
    }

    @Test("an event teleTAN's TAN cannot submit keys; it is required for a submission on behalf")
    func eventTANs() async throws {
        try await SubmissionHarness.run { harness async throws in
            let event = try await harness.teleTANTAN(.event)
            let refused = try await harness.submit(SubmissionPayloads.payload(), tan: event)
            #expect(refused.status == .forbidden)
            #expect(refused.body.readableBytes == 0)

            let normal = try await harness.teleTANTAN(.test)
            let wrongKind = try await harness.submit(
                SubmissionPayloads.onBehalfPayload(),
                tan: normal,
                path: "/version/v1/submission-on-behalf"
            )
            #expect(wrongKind.status == .forbidden)
            #expect(try await harness.storedRows() == 0)

            let onBehalf = try await harness.submit(
                SubmissionPayloads.onBehalfPayload(),
                tan: try await harness.teleTANTAN(.event),
                path: "/version/v1/submission-on-behalf"
            )
            #expect(onBehalf.status == .ok)
            #expect(onBehalf.headers[SubmissionController.savedCheckInsHeader] == "002")
            #expect(try await harness.count("check_in_protected_reports") == 2)
            #expect(try await harness.count("diagnosis_key") == 0)
        }
    }

    @Test("verification-service unreachable: 503 with Retry-After, nothing stored")
    func verificationDown() async throws {
        try await SubmissionHarness.run(
            ["VERIFICATION_CONNECT_TIMEOUT": "200ms"],
            verificationURL: "http://127.0.0.1:9"
        ) { harness async throws in
            let reply = try await harness.submit(SubmissionPayloads.payload(), tan: RandomUUID.generate())
            #expect(reply.status == .serviceUnavailable)
            #expect(reply.headers[.retryAfter] == "30")
            #expect(try await harness.storedRows() == 0)
        }
    }

    @Test("a bad payload does not use up the TAN: the same TAN then submits")
    func badPayloadKeepsTAN() async throws {
        try await SubmissionHarness.run { harness async throws in
            let tan = try await harness.labTAN()
            var bad = SubmissionPayloads.payload()
            bad.keys[0].keyData = Data(count: 3)
            #expect(try await harness.submit(bad, tan: tan).status == .badRequest)
            #expect(try await harness.submit(SubmissionPayloads.payload(), tan: tan).status == .ok)
        }
    }

    @Test("20 parallel submissions with one TAN: exactly one stores its keys")
    func parallelTAN() async throws {
        try await SubmissionHarness.run { harness async throws in
            let tan = try await harness.labTAN()
            let replies = try await harness.parallel(20, SubmissionPayloads.payload(), tan: tan)
            #expect(replies.filter { $0.status == .ok }.count == 1)
            #expect(replies.filter { $0.status == .forbidden }.count == 19, "statuses: \(replies.map(\.status.code))")
            #expect(try await harness.count("diagnosis_key") == 14)
        }
    }

    @Test("a failure when the transaction commits, after the keys and check-ins were written, leaves no rows")
    func atomicity() async throws {
        try await SubmissionHarness.run { harness async throws in
            // A deferred constraint trigger fails at COMMIT, after every statement of the submission succeeded.
            try await harness.execute(
                "CREATE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$"
            )
            try await harness.execute(
                """
                CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON check_in_protected_reports
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_at_commit()
                """
            )
            var payload = SubmissionPayloads.payload()
            payload.checkInProtectedReports = [SubmissionPayloads.protectedReport()]
            let reply = try await harness.submit(payload, tan: try await harness.labTAN())
            #expect(reply.status == .serviceUnavailable)
            #expect(try await harness.storedRows() == 0)
        }
    }

    @Test("a failing check-in statement does not fail the keys: 200, keys stored, no check-ins saved")
    func checkInFailureKeepsKeys() async throws {
        try await SubmissionHarness.run { harness async throws in
            try await harness.execute(
                "ALTER TABLE check_in_protected_reports ADD CONSTRAINT refuse_all CHECK (submission_timestamp < 0)"
            )
            var payload = SubmissionPayloads.payload()
            payload.checkInProtectedReports = [SubmissionPayloads.protectedReport()]
            let reply = try await harness.submit(payload, tan: try await harness.labTAN())
            #expect(reply.status == .ok)
            #expect(reply.headers[SubmissionController.savedCheckInsHeader] == "000")
            #expect(try await harness.count("diagnosis_key") == 14)
        }
    }

    @Test("a PCR key is never overwritten by a rapid-test key; a rapid-test key gets a PCR row beside it")
    func pcrOverRAT() async throws {
        try await SubmissionHarness.run { harness async throws in
            let store = PostgresDiagnosisKeyRepository(client: harness.database.client, logger: harness.database.logger)
            var generator = SeededGenerator(seed: 1)
            let policy = harness.runtime.configuration.policy
            let pcr = SubmissionPayloads.payload(keys: 2, type: .pcrTest)
            var rat = pcr
            rat.submissionType = .rapidTest
            rat.keys.append(SubmissionPayloads.key())

            #expect(
                try await store.store(
                    PreparedSubmission(payload: pcr, policy: policy, now: harness.clock.now, using: &generator)
                ).keys == 2
            )
            #expect(
                try await store.store(
                    PreparedSubmission(payload: rat, policy: policy, now: harness.clock.now, using: &generator)
                ).keys == 1
            )
            #expect(
                try await harness.count("diagnosis_key", where: "submission_type = 'SUBMISSION_TYPE_RAPID_TEST'") == 1
            )

            var laterPCR = SubmissionPayloads.payload(keys: 0, type: .pcrTest)
            laterPCR.keys = [rat.keys[2]]
            #expect(
                try await store.store(
                    PreparedSubmission(payload: laterPCR, policy: policy, now: harness.clock.now, using: &generator)
                ).keys == 1
            )
            #expect(try await harness.count("diagnosis_key") == 4)
            // Only consenting PCR keys are mirrored for federation.
            #expect(try await harness.count("federation_upload_key") == 3)
            #expect(
                try await harness.count("federation_upload_key", where: "submission_type <> 'SUBMISSION_TYPE_PCR_TEST'")
                    == 0
            )
        }
    }

    @Test("keys without consent and rapid-test keys are never mirrored for federation")
    func federationMirror() async throws {
        try await SubmissionHarness.run { harness async throws in
            #expect(
                try await harness.submit(
                    SubmissionPayloads.payload(keys: 3, consent: false),
                    tan: try await harness.labTAN()
                ).status == .ok
            )
            #expect(
                try await harness.submit(
                    SubmissionPayloads.payload(keys: 2, type: .rapidTest),
                    tan: try await harness.labTAN(code: 7)
                ).status == .ok
            )
            #expect(try await harness.count("diagnosis_key") == 5)
            #expect(try await harness.count("federation_upload_key") == 0)
        }
    }

    @Test("deleting a mirrored key deletes its federation row")
    func mirrorCascade() async throws {
        try await SubmissionHarness.run { harness async throws in
            #expect(
                try await harness.submit(SubmissionPayloads.payload(keys: 3), tan: try await harness.labTAN()).status
                    == .ok
            )
            #expect(try await harness.count("federation_upload_key") == 3)
            try await harness.execute(
                "DELETE FROM diagnosis_key WHERE rolling_start_interval_number = (SELECT min(rolling_start_interval_number) FROM diagnosis_key)"
            )
            #expect(try await harness.count("diagnosis_key") == 2)
            #expect(try await harness.count("federation_upload_key") == 2)
        }
    }

    @Test(
        "a submission on behalf whose check-ins cannot be stored gets 503, not an empty success; it is held and written once they can"
    )
    func onBehalfCheckInFailure() async throws {
        try await SubmissionHarness.run { harness async throws in
            try await harness.execute(
                "ALTER TABLE check_in_protected_reports ADD CONSTRAINT refuse_all CHECK (submission_timestamp < 0)"
            )
            let reply = try await harness.submit(
                SubmissionPayloads.onBehalfPayload(),
                tan: try await harness.teleTANTAN(.event),
                path: "/version/v1/submission-on-behalf"
            )
            #expect(reply.status == .serviceUnavailable)
            #expect(reply.headers[.retryAfter] == "31", "a retry after the recovery age completes it")
            #expect(try await harness.storedRows() == 0)
            #expect(try await harness.count("pending_submission") == 1)

            // While the write keeps failing, the recovery leaves it held, for the pass after next.
            #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(), "not yet abandoned")
            harness.clock.advance(by: 31)
            #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(deferred: 1))
            #expect(try await harness.count("pending_submission") == 1)
            try await harness.execute("ALTER TABLE check_in_protected_reports DROP CONSTRAINT refuse_all")
            #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(), "postponed by a pass")
            harness.clock.advance(by: 60)
            #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(completed: 1))
            #expect(try await harness.count("check_in_protected_reports") > 0)
            #expect(try await harness.count("pending_submission") == 0)
        }
    }

    @Test(
        "the keys of a submission whose write failed after its TAN was spent: the retry with the TAN writes them once, after the recovery age"
    )
    func retryCompletesHeldSubmission() async throws {
        try await SubmissionHarness.run { harness async throws in
            try await harness.execute(
                "ALTER TABLE diagnosis_key ADD CONSTRAINT refuse_all CHECK (submission_timestamp < 0)"
            )
            let tan = try await harness.labTAN()
            let failed = try await harness.submit(SubmissionPayloads.payload(), tan: tan)
            #expect(failed.status == .serviceUnavailable)
            #expect(try await harness.count("pending_submission") == 1)
            try await harness.execute("ALTER TABLE diagnosis_key DROP CONSTRAINT refuse_all")

            // Within the recovery age the attempt that spent the TAN may still run: the TAN counts as used. After
            // it, the retry finds that attempt abandoned and writes its keys.
            let early = try await harness.submit(SubmissionPayloads.payload(), tan: tan)
            #expect(early.status == .forbidden)
            harness.clock.advance(by: 31)
            let retried = try await harness.submit(SubmissionPayloads.payload(), tan: tan)
            let again = try await harness.submit(SubmissionPayloads.payload(), tan: tan)

            #expect(retried.status == .ok)
            #expect(again.status == .forbidden, "the TAN wrote its keys once")
            #expect(try await harness.count("diagnosis_key") == 14)
            #expect(try await harness.count("pending_submission") == 0)
        }
    }

    @Test(
        "without a retry, the recovery writes a held submission whose TAN was spent, and releases one whose TAN was not after the release age"
    )
    func recoveryWithoutRetry() async throws {
        try await SubmissionHarness.run { harness async throws in
            try await harness.execute(
                "ALTER TABLE diagnosis_key ADD CONSTRAINT refuse_all CHECK (submission_timestamp < 0)"
            )
            let spent = try await harness.submit(SubmissionPayloads.payload(), tan: try await harness.labTAN())
            #expect(spent.status == .serviceUnavailable)
            try await harness.execute("ALTER TABLE diagnosis_key DROP CONSTRAINT refuse_all")
            // An attempt held without its TAN ever reaching verification-service (its request died in between).
            let unspentTAN = try await harness.labTAN()
            let unspent = HeldAttempt(
                id: UUID(),
                credential: .tan,
                credentialHash: SecretHash.sha256Hex(unspentTAN),
                draft: try KeySubmission(
                    submissionType: "SUBMISSION_TYPE_PCR_TEST",
                    originCountry: "DE",
                    visitedCountries: ["DE"],
                    consentToFederation: false,
                    submissionHour: 480_000,
                    keys: []
                ).draft(),
                heldSince: harness.clock.now,
                due: harness.clock.now.addingTimeInterval(30)
            )
            _ = try await harness.runtime.dependencies.keys.hold(unspent, selfReport: nil)
            #expect(try await harness.count("pending_submission") == 2)

            harness.clock.advance(by: 31)
            #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(completed: 1, waiting: 1))
            #expect(try await harness.count("diagnosis_key") == 14)
            #expect(try await harness.count("pending_submission") == 1, "its TAN's spending may still land")
            harness.clock.advance(by: 600)
            #expect(try await harness.runtime.recovery.run() == SubmissionRecovery.Outcome(released: 1))
            #expect(try await harness.count("pending_submission") == 0)
            // The unspent TAN is still good.
            #expect(try await harness.submit(SubmissionPayloads.payload(), tan: unspentTAN).status == .ok)
        }
    }

    @Test("no log line at any level holds the TAN, key data or a location hash")
    func logPrivacy() async throws {
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "submission-test", factory: { _ in logs })
        logger.logLevel = .trace
        try await SubmissionHarness.run(["UNENCRYPTED_CHECKINS_ENABLED": "true"], logger: logger) {
            harness async throws in
            let tan = try await harness.labTAN()
            var payload = SubmissionPayloads.payload()
            payload.checkInProtectedReports = [SubmissionPayloads.protectedReport()]
            payload.checkIns = [SubmissionPayloads.checkIn()]
            #expect(try await harness.submit(payload, tan: tan).status == .ok)
            var bad = payload
            bad.origin = "X\nY"
            #expect(try await harness.submit(bad, tan: tan).status == .badRequest)
            #expect(try await harness.submit(payload, tan: tan).status == .forbidden)

            let text = logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
            #expect(!logs.entries.isEmpty)
            #expect(text.contains("HIDDEN"))
            let secrets =
                [tan, tan.uppercased()]
                + payload.keys.flatMap { key in
                    [Hex.encode(key.keyData), key.keyData.base64EncodedString()]
                } + [payload.checkInProtectedReports[0].locationIDHash.base64EncodedString(), "X\nY"]
            for secret in secrets {
                #expect(!text.contains(secret))
            }
        }
    }

    @Test("key padding stores multiplier keys per key")
    func keyPadding() async throws {
        try await SubmissionHarness.run(["RANDOM_KEY_PADDING_MULTIPLIER": "3"]) { harness async throws in
            #expect(
                try await harness.submit(SubmissionPayloads.payload(keys: 4), tan: try await harness.labTAN()).status
                    == .ok
            )
            #expect(try await harness.count("diagnosis_key") == 12)
        }
    }

    @Test(
        "unencrypted check-ins, when enabled: filtered ones counted, real and fake warnings stored with SHA-256 location ids"
    )
    func unencryptedCheckIns() async throws {
        try await SubmissionHarness.run([
            "UNENCRYPTED_CHECKINS_ENABLED": "true", "RANDOM_CHECKINS_PADDING_MULTIPLIER": "2",
        ]) { harness async throws in
            var payload = SubmissionPayloads.payload(keys: 2)
            let kept = SubmissionPayloads.checkIn(location: 1)
            payload.checkIns = [kept, SubmissionPayloads.checkIn(location: 2, trl: 1)]
            let reply = try await harness.submit(payload, tan: try await harness.labTAN())
            #expect(reply.status == .ok)
            #expect(reply.headers[SubmissionController.savedCheckInsHeader] == "001")
            #expect(reply.headers[SubmissionController.filteredCheckInsHeader] == "001")
            #expect(try await harness.count("trace_time_interval_warning") == 3)
            let hash = Hex.encode(CheckInFilter.hash(kept.locationID))
            #expect(
                try await harness.count(
                    "trace_time_interval_warning",
                    where: "trace_location_id = '\\x\(hash)'::bytea AND period = 6"
                ) == 1
            )
            #expect(
                try await harness.count(
                    "trace_time_interval_warning",
                    where: "submission_type = 'SUBMISSION_TYPE_PCR_TEST'"
                ) == 3
            )
        }
    }
}
