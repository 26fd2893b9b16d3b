// The example lists the NHS journey uploads (deploy/local/examples) are lists the portal accepts.

import ENNHS
import Foundation
import Testing

@Suite("Example local-risk lists")
struct ExampleListsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: Self.root.appendingPathComponent(path)))
    }

    @Test("venues.csv: every row valid today")
    func venues() throws {
        let venues = try NHSRiskyVenueCSV.parse(
            try Self.bytes("deploy/local/examples/venues.csv"),
            contentType: "text/csv",
            now: Date()
        ).get()
        #expect(venues.count == 2)
    }

    @Test("districts.json: every code of its shape, every tier one of distribution's tier metadata")
    func districts() throws {
        let metadata = try JSONSerialization.jsonObject(
            with: Data(try Self.bytes("Services/Distribution/Resources/nhs/tier-metadata.json"))
        )
        let tiers = Set(try #require(metadata as? [String: Any]).keys)
        let upload = try NHSRiskyPostDistricts.parse(
            try Self.bytes("deploy/local/examples/districts.json"),
            tiers: tiers
        ).get()
        #expect(upload.postDistricts.count == 2)
        #expect(upload.localAuthorities.count == 1)
    }
}
