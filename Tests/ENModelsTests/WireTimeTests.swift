// The one strict parser of the wire's days and instants.

import ENModels
import Foundation
import Testing

@Suite("Wire days and instants")
struct WireTimeTests {
    @Test("real days and instants parse to their UTC instant; fractions only where allowed")
    func valid() throws {
        #expect(WireTime.day("2024-02-29") == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(WireTime.instant("2020-08-24T21:59:00Z") == Date(timeIntervalSince1970: 1_598_306_340))
        #expect(WireTime.instant("2025-12-31T23:59:59Z") == Date(timeIntervalSince1970: 1_767_225_599))
        let fractional = try #require(WireTime.instant("2020-08-24T21:59:00.25Z", fractionalSeconds: true))
        #expect(abs(fractional.timeIntervalSince1970 - 1_598_306_340.25) < 0.000_001)
        #expect(WireTime.instant("2020-08-24T21:59:00.123456789Z", fractionalSeconds: true) != nil)
        #expect(WireTime.instant("2020-08-24T21:59:00.25Z") == nil, "no fraction unless allowed")
    }

    @Test(
        "an impossible day or time is refused, never rolled over into the next one",
        arguments: [
            "2025-02-30T10:00:00Z", "2025-02-29T10:00:00Z", "2025-04-31T00:00:00Z", "2025-13-01T00:00:00Z",
            "2025-00-10T00:00:00Z", "2025-01-00T00:00:00Z", "2025-11-04T13:60:00Z", "2025-11-04T25:00:00Z",
            "2025-11-04T24:00:00Z", "2025-11-04T10:00:60Z",
        ]
    )
    func impossible(_ text: String) {
        #expect(WireTime.instant(text, fractionalSeconds: true) == nil)
    }

    @Test(
        "any other shape is refused",
        arguments: [
            "", "2025-11-04", "2025-11-04T10:00:00", "2025-11-04T10:00:00+00:00", "2025-11-04 10:00:00Z",
            "2025-11-04t10:00:00z", "+2025-11-04T10:00:00Z", "2025-1-04T10:00:00Z", "2025-11-04T10:00:00.Z",
            "2025-11-04T10:00:00.1234567890Z", "２０２５-11-04T10:00:00Z", "2025-11-04T10:00:0xZ",
        ]
    )
    func malformed(_ text: String) {
        #expect(WireTime.instant(text, fractionalSeconds: true) == nil)
    }

    @Test(
        "days: exactly yyyy-MM-dd of a real day",
        arguments: ["2025-02-30", "2025-2-03", "20250203", "2025-02-03 ", ""]
    )
    func days(_ text: String) {
        #expect(WireTime.day(text) == nil)
        #expect(WireTime.day("2025-02-03") != nil)
    }
}
