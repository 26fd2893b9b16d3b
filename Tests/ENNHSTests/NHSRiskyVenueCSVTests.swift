// The risky venues' CSV (nhs §5): every message of the reference, the contract's rules it left out, and the list
// phones download.

import ENNHS
import ENServiceKit
import Foundation
import Testing

struct NHSRiskyVenueCSVTests {
    static let now = Date(timeIntervalSince1970: 1_764_000_000)  // 2025-11-24T16:00:00Z
    static let header = "# venue_id, start_time, end_time, message_type, optional_parameter\n"

    static func parse(
        _ text: String,
        contentType: String? = "text/csv"
    ) -> Result<[NHSRiskyVenue], NHSRiskyVenueCSV.Problem> {
        NHSRiskyVenueCSV.parse(Array(text.utf8), contentType: contentType, now: Self.now)
    }

    @Test("a valid list: quoted and unquoted fields, spaces, CRLF, M1 and M2; the phones' JSON")
    func valid() throws {
        let csv =
            Self.header
            + "\"CD2\", \"2025-11-04T13:33:03Z\", \"2025-11-14T23:33:03Z\", \"M1\", \"\"\r\n"
            + "4WT59M5Y,2025-11-20T08:00:00Z,2025-11-20T12:00:00Z,M2,\n"
        let venues = try Self.parse(csv).get()
        #expect(venues.map(\.id) == ["CD2", "4WT59M5Y"])
        #expect(venues.map(\.messageType) == ["M1", "M2"])
        #expect(
            String(decoding: NHSRiskyVenueList.json(venues), as: UTF8.self)
                == #"{"venues":[{"id":"CD2","riskyWindow":{"from":"2025-11-04T13:33:03Z","until":"2025-11-14T23:33:03Z"},"messageType":"M1"},{"id":"4WT59M5Y","riskyWindow":{"from":"2025-11-20T08:00:00Z","until":"2025-11-20T12:00:00Z"},"messageType":"M2"}]}"#
        )
        #expect(try Self.parse(Self.header).get() == [], "a header alone is an empty list")
    }

    @Test(
        "every refusal names its reason (the first failure wins)",
        arguments: [
            ("", "text/csv", "No payload"),
            (Self.header, "application/json", "Content type is not text/csv"),
            (
                "# venue_id, start_time, end_time, message_type\n", "text/csv",
                "Invalid header. Expected [venue_id, start_time, end_time, message_type, optional_parameter]"
            ),
            (
                Self.header + "CD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1\n", "text/csv",
                "Invalid data in row 1"
            ),
            (
                Self.header + "\nCD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1,\n", "text/csv",
                "Invalid data in row 1"
            ),
            (
                Self.header + "AB1, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1,\n", "text/csv",
                "VenueId must match [CDEFHJKMPRTVWXY2345689]{1,12}"
            ),
            (
                Self.header + "CD2, 2025-02-30T10:00:00Z, 2025-11-14T23:33:03Z, M1,\n", "text/csv",
                "Date did not conform to expected format yyyy-MM-dd'T'HH:mm:ss'Z'"
            ),
            (
                Self.header + "CD2, 2025-11-04T13:60:00Z, 2025-11-14T23:33:03Z, M1,\n", "text/csv",
                "Date did not conform to expected format yyyy-MM-dd'T'HH:mm:ss'Z'"
            ),
            (
                Self.header + "CDEFHJKMPRTVW, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1,\n", "text/csv",
                "VenueId must match [CDEFHJKMPRTVWXY2345689]{1,12}"
            ),
            (
                Self.header + "CD2, 2025-11-04 13:33:03, 2025-11-14T23:33:03Z, M1,\n", "text/csv",
                "Date did not conform to expected format yyyy-MM-dd'T'HH:mm:ss'Z'"
            ),
            (
                Self.header + "CD2, 2025-11-04T13:33:03.000Z, 2025-11-14T23:33:03Z, M1,\n", "text/csv",
                "Date did not conform to expected format yyyy-MM-dd'T'HH:mm:ss'Z'"
            ),
            (
                Self.header + "CD2, 2025-11-14T23:33:03Z, 2025-11-14T23:33:03Z, M1,\n", "text/csv",
                "Start date must be <= end date"
            ),
            (
                Self.header + "CD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M3,\n", "text/csv",
                "Message Type must match M[1-2]"
            ),
            (
                Self.header + "CD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1, 07911123456\n", "text/csv",
                "Message type M1 does not support optional parameter"
            ),
            (
                Self.header + "CD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1, "
                    + String(repeating: "7", count: 40) + "\n",
                "text/csv", "Message type M1 does not support optional parameter"
            ),
            (
                Self.header
                    + "CD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1,\nCD2, 2025-11-05T13:33:03Z, 2025-11-15T23:33:03Z, M2,\n",
                "text/csv", "Duplicate venue id CD2"
            ),
            (
                Self.header + "CD2, 2025-11-24T00:00:00Z, 2025-11-24T23:00:00Z, M1,\n", "text/csv",
                "Start date must be yesterday or before"
            ),
            (
                Self.header + "\"CD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1,\n", "text/csv",
                "Invalid data in row 1"
            ),
        ]
    )
    func refusals(csv: String, contentType: String, message: String) {
        #expect(Self.parse(csv, contentType: contentType) == .failure(NHSRiskyVenueCSV.Problem(message)))
    }

    @Test("over 1 MB is refused before it is read")
    func tooLarge() {
        let csv =
            Self.header + String(repeating: "CD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1,\n", count: 20_000)
        #expect(Self.parse(csv) == .failure(NHSRiskyVenueCSV.Problem("Csv content is more than 1MB")))
    }

    @Test("the officer's preview gets every row with its own problem")
    func rows() throws {
        let csv =
            Self.header
            + "CD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M1,\nAB, x, y, M1,\nCD2, 2025-11-04T13:33:03Z, 2025-11-14T23:33:03Z, M2,\n"
        let rows = try NHSRiskyVenueCSV.rows(Array(csv.utf8), contentType: "text/csv", now: Self.now).get()
        #expect(rows.map(\.number) == [1, 2, 3])
        #expect(
            rows.map(\.problem) == [nil, "VenueId must match [CDEFHJKMPRTVWXY2345689]{1,12}", "Duplicate venue id CD2"]
        )
        #expect(rows[0].venue?.id == "CD2")
    }
}
