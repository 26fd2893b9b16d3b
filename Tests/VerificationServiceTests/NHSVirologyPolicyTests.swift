// The virology policy table of nhs §3.4: the two flags of a V2 answer, and which results an app is not shown.

import ENNHS
import ENServiceKit
import Testing

@testable import VerificationService

@Suite("NHS virology policy")
struct NHSVirologyPolicyTests {
    /// A row of the table: country, kit, result and the two flags.
    struct Row: Sendable, CustomTestStringConvertible {
        let country: String?
        let kit: NHSTestKit
        let result: NHSTestResult
        let submissionSupported: Bool
        let confirmatoryTest: Bool

        var testDescription: String {
            "\(self.country ?? "nil") \(self.kit.rawValue) \(self.result.rawValue)"
        }
    }

    static func row(_ country: String?, _ kit: NHSTestKit, _ result: NHSTestResult, _ flags: (Bool, Bool)) -> Row {
        Row(country: country, kit: kit, result: result, submissionSupported: flags.0, confirmatoryTest: flags.1)
    }

    static let kits: [NHSTestKit] = [.labResult, .rapidResult, .rapidSelfReported]

    /// (`diagnosisKeySubmissionSupported`, `requiresConfirmatoryTest`) by country, kit and result.
    static let table: [Row] = {
        var rows: [Row] = []
        for country in ["England", "Wales"] {
            rows.append(Self.row(country, .labResult, .positive, (true, false)))
            rows.append(Self.row(country, .rapidResult, .positive, (true, false)))
            rows.append(Self.row(country, .rapidSelfReported, .positive, (false, true)))
            for kit in Self.kits {
                for result in [NHSTestResult.negative, .void] {
                    rows.append(Self.row(country, kit, result, (false, false)))
                }
            }
        }
        // Any other country, and none: both flags false whatever the kit and result.
        for country in ["Scotland", "Northern Ireland", "", nil] as [String?] {
            for kit in Self.kits {
                for result in [NHSTestResult.positive, .negative, .void] {
                    rows.append(Self.row(country, kit, result, (false, false)))
                }
            }
        }
        return rows
    }()

    @Test("the table covers 2 countries and 4 others by 3 kits by 3 results")
    func tableSize() {
        #expect(Self.table.count == 6 * 3 * 3)
    }

    @Test("each country, kit and result gets the table's flags", arguments: Self.table)
    func flags(row: Row) {
        let policy = NHSVirologyPolicy(country: row.country, result: row.result, kit: row.kit)
        #expect(policy.diagnosisKeySubmissionSupported == row.submissionSupported)
        #expect(policy.requiresConfirmatoryTest == row.confirmatoryTest)
        #expect(
            policy
                == NHSVirologyPolicy(
                    diagnosisKeySubmissionSupported: row.submissionSupported,
                    requiresConfirmatoryTest: row.confirmatoryTest
                )
        )
    }

    @Test("the known countries are England and Wales")
    func countries() {
        #expect(NHSVirologyPolicy.countries == ["England", "Wales"])
    }

    @Test("V2 hides a result needing a confirmatory test from apps up to 4.3 only")
    func hidesV2() {
        let confirmatory = NHSVirologyPolicy(country: "England", result: .positive, kit: .rapidSelfReported)
        #expect(confirmatory.requiresConfirmatoryTest)
        #expect(confirmatory.hidesV2(from: NHSUserAgent("p=iOS,o=14,v=4.3,b=1")))
        #expect(confirmatory.hidesV2(from: NHSUserAgent("p=Android,o=29,v=4.3.5,b=120")))
        #expect(confirmatory.hidesV2(from: NHSUserAgent("p=Android,o=29,v=3.12.0,b=120")))
        #expect(!confirmatory.hidesV2(from: NHSUserAgent("p=iOS,o=14,v=4.4,b=1")))
        #expect(!confirmatory.hidesV2(from: NHSUserAgent("p=iOS,o=14,v=5.0,b=1")))
        #expect(!confirmatory.hidesV2(from: NHSUserAgent(nil)), "no header: unknown version, never blocked")
        #expect(!confirmatory.hidesV2(from: NHSUserAgent("p=iOS,o=14,v=4.x,b=1")), "malformed: unknown version")
    }

    @Test("V2 hides nothing that needs no confirmatory test, whatever the app's version")
    func notHiddenV2() {
        let agent = NHSUserAgent("p=iOS,o=14,v=4.3,b=1")
        for kit in [NHSTestKit.labResult, .rapidResult] {
            #expect(!NHSVirologyPolicy(country: "Wales", result: .positive, kit: kit).hidesV2(from: agent))
        }
        for result in [NHSTestResult.negative, .void] {
            let policy = NHSVirologyPolicy(country: "England", result: result, kit: .rapidSelfReported)
            #expect(!policy.hidesV2(from: agent))
        }
        let elsewhere = NHSVirologyPolicy(country: "Scotland", result: .positive, kit: .rapidSelfReported)
        #expect(!elsewhere.hidesV2(from: agent))
        #expect(!NHSVirologyPolicy(country: nil, result: .positive, kit: .rapidSelfReported).hidesV2(from: agent))
    }

    @Test("V1 hides self-reported rapid tests only")
    func hidesV1() {
        #expect(NHSVirologyPolicy.hidesV1(.rapidSelfReported))
        #expect(!NHSVirologyPolicy.hidesV1(.labResult))
        #expect(!NHSVirologyPolicy.hidesV1(.rapidResult))
    }
}
