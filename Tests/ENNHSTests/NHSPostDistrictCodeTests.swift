// The shapes of the codes a risky post-district upload may publish.

import ENNHS
import Testing

@Suite("Risky post-district codes")
struct NHSPostDistrictCodeTests {
    @Test("UK postcode districts: one or two letters, a digit, then a digit or letter or nothing")
    func postDistricts() {
        for code in ["M1", "CF10", "SW1A", "EC1A", "W1", "AB10", "B1", "BT9", "L1", "D19"] {
            #expect(NHSRiskyPostDistricts.isPostDistrict(code), "\(code)")
        }
        for code in ["", "1", "M", "m1", "MMM1", "SW1AB", "M1 1AA", "=cmd|' /C calc'!A0", "M-1", "Ｍ1", "M1\n"] {
            #expect(!NHSRiskyPostDistricts.isPostDistrict(code), "\(code.debugDescription)")
        }
    }

    @Test("local authorities: a capital letter and eight digits")
    func localAuthorities() {
        for code in ["E07000240", "W06000015", "S12000033", "N09000001"] {
            #expect(NHSRiskyPostDistricts.isLocalAuthority(code), "\(code)")
        }
        for code in [
            "", "E0700024", "E070002400", "e07000240", "EE7000240", "E07000 24", String(repeating: "A", count: 5000),
        ] {
            #expect(!NHSRiskyPostDistricts.isLocalAuthority(code), "\(code.prefix(20))")
        }
    }
}
