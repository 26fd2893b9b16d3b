// A result the lab protected with the date of birth is the birth date's owner's alone (issue 15, finding 1): whoever
// photographed the test's QR code can neither register once the result is there, nor read it, nor get a TAN.

import ENTestSupport
import Foundation
import HTTPTypes
import Testing

@testable import TestResultService
@testable import VerificationService

@Suite("Date-of-birth protection (PostgreSQL)", .postgres(VerificationMigrations.group, TestResultMigrations.group))
struct DateOfBirthProtectionTests {
    @Test("a protected result: registration without the DOB hash or with a wrong one is refused; with it, all works")
    func registration() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            let dob = TestIDs.dobHash()
            try await harness.labResult(guid, code: 2, dobProtected: true)
            try await harness.labResult(dob, code: 2, dobProtected: true)

            let withoutDOB = try await harness.register(guid: guid)
            let wrongDOB = try await harness.register(guid: guid, dob: TestIDs.dobHash())
            let token = try await harness.registeredToken(guid: guid, dob: dob)
            let poll = try await harness.poll(token)
            let tan = try await harness.requestTAN(token)

            #expect(withoutDOB.status == .forbidden)
            #expect(withoutDOB.text.contains("protected"))
            #expect(wrongDOB.status == .forbidden)
            #expect(try poll.json()["testResult"] as? Int == 2)
            #expect(tan.status == .created)
            #expect(try await harness.count("app_session") == 1)
        }
    }

    @Test("a session without the DOB hash, registered before the protected result came: no result, no TAN")
    func earlyRegistration() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            let token = try await harness.registeredToken(guid: guid)
            try await harness.labResult(guid, code: 2, dobProtected: true)

            let poll = try await harness.poll(token)
            let tan = try await harness.requestTAN(token)

            #expect(poll.status == .forbidden)
            #expect(tan.status == .forbidden)
            #expect(try await harness.count("tan") == 0)
        }
    }

    @Test("without the lab's mark a GUID without the DOB hash still works, as in the reference")
    func unprotected() async throws {
        try await VerificationHarness.run { harness async throws in
            let guid = TestIDs.hashedGUID()
            try await harness.labResult(guid, code: 2)

            let token = try await harness.registeredToken(guid: guid)
            let tan = try await harness.requestTAN(token)

            #expect(tan.status == .created)
        }
    }
}
