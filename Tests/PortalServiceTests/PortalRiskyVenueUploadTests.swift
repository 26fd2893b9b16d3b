// The NHS risky venues' upload at the portal (nhs §5): the API key, the CSV checked whole, publication through
// distribution-service before 202, nothing published for a bad list, and the audit trail.

import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import PortalService

@Suite("Portal risky venues' upload", .postgres(PortalMigrations.group))
struct PortalRiskyVenueUploadTests {
    static let csv = """
        # venue_id, start_time, end_time, message_type, optional_parameter
        "CD2", "2023-11-10T13:33:03Z", "2023-11-12T23:33:03Z", "M1", ""

        """

    func upload(
        _ harness: PortalHarness,
        _ csv: String,
        key: NHSAPIKeyCredential? = TestNHS.venues,
        contentType: String = "text/csv"
    ) async throws -> RouterReply {
        var headers: HTTPFields = [.contentType: contentType]
        if let key { headers[.authorization] = key.authorization }
        return try await harness.app.post(
            "/upload/identified-risk-venues",
            headers: headers,
            body: ByteBuffer(string: csv)
        )
    }

    @Test("a valid list: published as the phones' JSON, 202 successfully uploaded, audited with its size")
    func published() async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { harness in
            let reply = try await self.upload(harness, Self.csv)
            #expect(reply.status == .accepted)
            #expect(reply.text == "successfully uploaded")
            let published = await harness.lists.published
            #expect(published.count == 1)
            #expect(String(decoding: published.first ?? [], as: UTF8.self).contains(#""id":"CD2""#))
            let audit = try await harness.audit().filter { $0.action == "risky_venues_published" }
            #expect(audit.map(\.details) == ["venues=1 source=api"])
            #expect(!harness.logText.contains("CD2"), "no venue id in any log line")
        }
    }

    @Test("refusals publish nothing: a bad list 422 with its reason, no or a wrong key 403, distribution down 503")
    func refusals() async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { harness in
            let bad = try await self.upload(harness, Self.csv.replacingOccurrences(of: "\"M1\"", with: "\"M3\""))
            #expect(bad.status == .unprocessableContent)
            #expect(bad.text == "validation error: Message Type must match M[1-2]")
            #expect(
                try await self.upload(harness, Self.csv, contentType: "application/json").text
                    == "validation error: Content type is not text/csv"
            )
            #expect(try await self.upload(harness, Self.csv, key: nil).status == .forbidden)
            #expect(try await self.upload(harness, Self.csv, key: TestNHS.mobile).status == .forbidden)
            #expect(await harness.lists.published.isEmpty)
            await harness.lists.setUnavailable(true)
            #expect(try await self.upload(harness, Self.csv).status == .serviceUnavailable)
            #expect(try await harness.audit().filter { $0.action == "risky_venues_published" }.isEmpty)
        }
    }

    @Test("a list over 1 MB is 422 in the contract's words after the API key, for venues and post districts")
    func overOneMegabyte() async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { harness in
            let large = Self.csv + String(repeating: "x", count: NHSRiskyVenueCSV.maxBytes)
            let venues = try await self.upload(harness, large)
            #expect(venues.status == .unprocessableContent)
            #expect(venues.text == "validation error: Csv content is more than 1MB")
            #expect(try await self.upload(harness, large, key: nil).status == .forbidden)
            let districts = try await harness.app.post(
                "/upload/high-risk-postal-districts",
                headers: [.contentType: "application/json", .authorization: TestNHS.postDistricts.authorization],
                body: ByteBuffer(string: String(repeating: " ", count: NHSRiskyPostDistricts.maxBytes + 1))
            )
            #expect(districts.status == .unprocessableContent)
            #expect(districts.text == "validation error: payload is more than 1MB")
            #expect(await harness.lists.published.isEmpty)
        }
    }

    @Test("without NHS_ENABLED the route does not exist")
    func off() async throws {
        try await PortalHarness.run { (harness: PortalHarness) async throws in
            #expect(try await self.upload(harness, Self.csv).status == .notFound)
        }
    }
}
