// One registration token per GUID, per DOB hash and per teleTAN (cwa-satellites §1.4), also under concurrency.

import ENCrypto
import ENTestSupport
import Foundation
import HTTPTypes
import PostgresNIO
import Testing

@testable import TestResultService
@testable import VerificationService

@Suite("Registration (PostgreSQL)", .postgres(VerificationMigrations.group, TestResultMigrations.group))
struct RegistrationTests {
    @Test("a GUID registers once: again, with another DOB, or in upper case is 400")
    func oneTokenPerGUID() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            let first = try await harness.register(guid: guid)
            let again = try await harness.register(guid: guid)
            let withDOB = try await harness.register(guid: guid, dob: TestIDs.dobHash())
            let upperCase = try await harness.register(guid: guid.uppercased())

            #expect(first.status == .created)
            #expect(RandomUUID.isValid(try first.string("registrationToken") ?? ""))
            #expect(again.status == .badRequest)
            #expect(withDOB.status == .badRequest)
            #expect(upperCase.status == .badRequest)
            #expect(try await harness.count("app_session") == 1)
        }
    }

    @Test(
        "beyond REGISTRATIONS_PER_DAY a registration gets 429 with Retry-After until UTC midnight; the next day it works"
    )
    func dailyCap() async throws {
        try await VerificationHarness.run(["REGISTRATIONS_PER_DAY": "2"]) { harness async throws in
            let capped = TestIDs.hashedGUID()
            let first = try await harness.register(guid: TestIDs.hashedGUID())
            let second = try await harness.register(guid: TestIDs.hashedGUID())
            let third = try await harness.register(guid: capped)
            harness.clock.advance(by: 6400)  // the harness starts 6,400 s before midnight UTC
            let nextDay = try await harness.register(guid: capped)

            #expect(first.status == .created)
            #expect(second.status == .created)
            #expect(third.status == .tooManyRequests)
            #expect(third.headers[.retryAfter] == "6400")
            #expect(nextDay.status == .created)
            #expect(try await harness.count("app_session") == 3)
        }
    }

    @Test("a DOB hash registers once, and is never accepted as another registration's GUID or vice versa")
    func oneTokenPerDOBHash() async throws {
        try await VerificationHarness.run { harness async throws in
            let dob = TestIDs.dobHash()
            let guid = TestIDs.hashedGUID()
            let first = try await harness.register(guid: guid, dob: dob)
            let reusedDOB = try await harness.register(guid: TestIDs.hashedGUID(), dob: dob)
            // The DOB pattern admits a plain hex hash, so a registered GUID could be sent as someone's DOB hash.
            let guidAsDOB = try await harness.register(guid: TestIDs.hashedGUID(), dob: guid)
            let dobWithHex = "a" + dob.dropFirst()
            let secondGUID = TestIDs.hashedGUID()
            let okay = try await harness.register(guid: secondGUID, dob: dobWithHex)
            let dobAsGUID = try await harness.register(guid: dobWithHex)

            #expect(first.status == .created)
            #expect(reusedDOB.status == .badRequest)
            #expect(guidAsDOB.status == .badRequest)
            #expect(okay.status == .created)
            #expect(dobAsGUID.status == .badRequest)
            #expect(try await harness.count("app_session") == 2)
            #expect(try await harness.count("registered_key") == 4)
        }
    }

    @Test("100 parallel registrations of one GUID: exactly one token")
    func parallelGUID() async throws {
        try await VerificationHarness.run { harness async throws in
            let body = VerificationBodies.registration(guid: TestIDs.hashedGUID())
            let replies = try await harness.parallel(100, harness.external, "/version/v1/registrationToken", body)

            #expect(replies.filter { $0.status == .created }.count == 1)
            #expect(replies.filter { $0.status == .badRequest }.count == 99)
            #expect(try await harness.count("app_session") == 1)
        }
    }

    @Test("a teleTAN registers once, then it is redeemed; 50 parallel attempts: exactly one token")
    func oneTokenPerTeleTAN() async throws {
        try await VerificationHarness.run { harness async throws in
            let single = try await harness.teleTAN()
            let first = try await harness.registerTeleTAN(single)
            let again = try await harness.registerTeleTAN(single)
            let raced = try await harness.teleTAN()
            let replies = try await harness.parallel(
                50,
                harness.external,
                "/version/v1/registrationToken",
                VerificationBodies.teleTANRegistration(raced)
            )

            #expect(first.status == .created)
            #expect(again.status == .badRequest)
            #expect(replies.filter { $0.status == .created }.count == 1)
            #expect(try await harness.count("tele_tan", where: "redeemed_at IS NOT NULL") == 2)
            #expect(try await harness.count("app_session", where: "source = 'TELETAN'") == 2)
        }
    }

    @Test("a teleTAN of type TEST expires after one hour, EVENT after two days")
    func teleTANLifetimes() async throws {
        try await VerificationHarness.run { harness async throws in
            let test = try await harness.teleTAN(.test)
            let event = try await harness.teleTAN(.event)
            let eventLate = try await harness.teleTAN(.event)
            harness.clock.advance(by: 3600)
            let testExpired = try await harness.registerTeleTAN(test)
            let eventValid = try await harness.registerTeleTAN(event)
            harness.clock.advance(by: 2 * 86400 - 3600)
            let eventExpired = try await harness.registerTeleTAN(eventLate)

            #expect(testExpired.status == .badRequest)
            #expect(eventValid.status == .created)
            #expect(eventExpired.status == .badRequest)
        }
    }

    @Test("an unknown but well-formed teleTAN is 400 and creates nothing")
    func unknownTeleTAN() async throws {
        try await VerificationHarness.run { harness async throws in
            var generator = SystemRandomNumberGenerator()
            let teleTAN = TeleTAN.generate(using: &generator).value
            let reply = try await harness.registerTeleTAN(teleTAN)

            #expect(reply.status == .badRequest)
            #expect(try await harness.count("app_session") == 0)
        }
    }

    @Test("only hashes are stored: no token, teleTAN or TAN appears in any row")
    func onlyHashesStored() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)
            let token = try await harness.registeredToken(guid: guid)
            let tan = try #require(try await harness.requestTAN(token).string("tan"))
            let teleTAN = try await harness.teleTAN()
            let rows = try await harness.database.client.query(
                """
                SELECT string_agg(t::text, '|') FROM (
                    SELECT row_to_json(s)::text AS t FROM app_session s UNION ALL SELECT row_to_json(x)::text FROM tan x
                    UNION ALL SELECT row_to_json(y)::text FROM tele_tan y) everything
                """
            )
            var dump = ""
            for try await text in rows.decode(String?.self) { dump = text ?? "" }

            #expect(!dump.isEmpty)
            #expect(!dump.contains(token))
            #expect(!dump.contains(tan))
            #expect(!dump.contains(teleTAN))
            #expect(dump.contains(SecretHash.sha256Hex(token)))
        }
    }
}
