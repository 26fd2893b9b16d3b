// The shared result codes 0–14.

import ENModels
import Testing

@Suite("Lab test result codes")
struct LabTestResultTests {
    @Test("every code 0–14 round-trips; anything else is refused")
    func roundTrip() {
        for code in 0...14 {
            #expect(LabTestResult(code: code)?.code == code)
        }
        #expect(LabTestResult(code: -1) == nil)
        #expect(LabTestResult(code: 15) == nil)
    }

    @Test("kinds and outcomes follow the spec's table")
    func table() {
        #expect(LabTestResult(code: 2) == LabTestResult(kind: .pcr, outcome: .positive))
        #expect(LabTestResult(code: 7) == LabTestResult(kind: .rapidAntigen, outcome: .positive))
        #expect(LabTestResult(code: 14) == LabTestResult(kind: .pointOfCareNAT, outcome: .redeemed))
        #expect(LabTestResult(code: 5) == .pending(.rapidAntigen))
    }

    @Test("verification reads PoC-NAT codes as PCR codes and everything else unchanged")
    func verificationCodes() {
        #expect(
            (0...14).map { LabTestResult(code: $0)!.codeForVerification } == [
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4,
            ]
        )
    }

    @Test("redeemed keeps the kind")
    func redeemedKeepsKind() {
        #expect(
            (0...14).map { LabTestResult(code: $0)!.redeemed.code } == [
                4, 4, 4, 4, 4, 9, 9, 9, 9, 9, 14, 14, 14, 14, 14,
            ]
        )
    }
}
