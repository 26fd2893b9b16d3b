// The NHS local-risk lists at the portal (nhs §5, §6): the risky post districts' API upload, and a venue officer's
// pages — upload a file, see every entry checked, confirm — publishing through distribution-service, audited.

import ENCrypto
import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import PortalService

@Suite("Portal local-risk lists", .postgres(PortalMigrations.group))
struct PortalLocalRiskTests {
    static let districts =
        #"{"postDistricts":{"M1":{"riskIndicator":"M","tierIndicator":"EN.Tier1"},"CF10":{"riskIndicator":"H","tierIndicator":"WA.Tier1"}},"localAuthorities":{"E07000240":{"tierIndicator":"EN.Tier2"}}}"#
    static let venues = """
        # venue_id, start_time, end_time, message_type, optional_parameter
        "CD2", "2023-11-10T13:33:03Z", "2023-11-12T23:33:03Z", "M1", ""
        "CD3", "2023-11-10T13:33:03Z", "2023-11-12T23:33:03Z", "M2", ""

        """

    func uploadDistricts(
        _ harness: PortalHarness,
        _ json: String,
        key: NHSAPIKeyCredential? = TestNHS.postDistricts
    ) async throws -> RouterReply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let key { headers[.authorization] = key.authorization }
        return try await harness.app.post(
            "/upload/high-risk-postal-districts",
            headers: headers,
            body: ByteBuffer(string: json)
        )
    }

    @Test("post districts by API: published in the upload's shape, 202, audited with the counts")
    func districtsPublished() async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { (harness: PortalHarness) async throws in
            let reply = try await self.uploadDistricts(harness, Self.districts)
            #expect(reply.status == .accepted)
            #expect(reply.text == "successfully uploaded")
            let published = await harness.lists.publishedPostDistricts
            #expect(
                published.map { String(decoding: $0, as: UTF8.self) } == [
                    #"{"localAuthorities":{"E07000240":{"tierIndicator":"EN.Tier2"}},"postDistricts":{"CF10":{"riskIndicator":"H","tierIndicator":"WA.Tier1"},"M1":{"riskIndicator":"M","tierIndicator":"EN.Tier1"}}}"#
                ]
            )
            let audit = try await harness.audit().filter { $0.action == "risky_post_districts_published" }
            #expect(audit.map(\.details) == ["postDistricts=2 localAuthorities=1 source=api"])
            #expect(!harness.logText.contains("CF10"), "no post district in any log line")
        }
    }

    @Test(
        "post districts by API: every refusal of the reference's mapper is 422 with its message and publishes nothing",
        arguments: [
            ("[]", "unable to deserialize payload"),
            (#"{"postDistricts":{}}"#, "unable to deserialize payload"),
            (#"{"postDistricts":{"M1":{"riskIndicator":1}},"localAuthorities":{}}"#, "unable to deserialize payload"),
            (
                #"{"postDistricts":{" ":{"riskIndicator":"H","tierIndicator":"EN.Tier1"}},"localAuthorities":{}}"#,
                "Invalid post district - no value"
            ),
            (
                #"{"postDistricts":{"ABCDEFGHIJKLMNOPQRSTU":{"riskIndicator":"H","tierIndicator":"EN.Tier1"}},"localAuthorities":{}}"#,
                "Invalid post district longer than 20 characters: ABCDEFGHIJKLMNOPQRSTU"
            ),
            (
                #"{"postDistricts":{"M1":{"riskIndicator":"X","tierIndicator":"EN.Tier1"}},"localAuthorities":{}}"#,
                "Invalid risk indicator: X for post district: M1"
            ),
            (
                #"{"postDistricts":{"M1":{"tierIndicator":"EN.Tier1"}},"localAuthorities":{}}"#,
                "Invalid risk indicator: null for post district: M1"
            ),
            (
                #"{"postDistricts":{"M1":{"riskIndicator":"H","tierIndicator":"EN.Tier9"}},"localAuthorities":{}}"#,
                "Invalid tier indicator: EN.Tier9 for post district: M1"
            ),
            (
                #"{"postDistricts":{},"localAuthorities":{"":{"tierIndicator":"EN.Tier1"}}}"#,
                "Invalid local authority - no value"
            ),
            (
                #"{"postDistricts":{},"localAuthorities":{"E07000240":{}}}"#,
                "Invalid tier indicator: null for local authority: E07000240"
            ),
            (
                #"{"postDistricts":{"=cmd|' /C calc'!A0":{"riskIndicator":"H","tierIndicator":"EN.Tier1"}},"localAuthorities":{}}"#,
                "Invalid post district: =cmd|' /C calc'!A0 is not a UK postcode district such as M1, CF10 or SW1A"
            ),
            (
                #"{"postDistricts":{"m1":{"riskIndicator":"H","tierIndicator":"EN.Tier1"}},"localAuthorities":{}}"#,
                "Invalid post district: m1 is not a UK postcode district such as M1, CF10 or SW1A"
            ),
            (
                #"{"postDistricts":{"SW1AB":{"riskIndicator":"H","tierIndicator":"EN.Tier1"}},"localAuthorities":{}}"#,
                "Invalid post district: SW1AB is not a UK postcode district such as M1, CF10 or SW1A"
            ),
            (
                #"{"postDistricts":{},"localAuthorities":{"\#(String(repeating: "A", count: 5000))":{"tierIndicator":"EN.Tier1"}}}"#,
                "Invalid local authority: \(String(repeating: "A", count: 40)) is not a GSS code of a letter and 8 digits such as E07000240"
            ),
            (
                #"{"postDistricts":{},"localAuthorities":{"E0700024":{"tierIndicator":"EN.Tier1"}}}"#,
                "Invalid local authority: E0700024 is not a GSS code of a letter and 8 digits such as E07000240"
            ),
        ]
    )
    func districtsRefused(json: String, message: String) async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { (harness: PortalHarness) async throws in
            let reply = try await self.uploadDistricts(harness, json)
            #expect(reply.status == .unprocessableContent)
            #expect(reply.text == "validation error: \(message)")
            #expect(await harness.lists.publishedPostDistricts.isEmpty)
        }
    }

    @Test("post districts by API: empty maps are a list; the venues' key 403; distribution down 503")
    func districtsKeysAndOutage() async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { (harness: PortalHarness) async throws in
            #expect(
                try await self.uploadDistricts(harness, #"{"postDistricts":{},"localAuthorities":{}}"#).status
                    == .accepted
            )
            #expect(try await self.uploadDistricts(harness, Self.districts, key: TestNHS.venues).status == .forbidden)
            #expect(try await self.uploadDistricts(harness, Self.districts, key: nil).status == .forbidden)
            #expect(await harness.lists.publishedPostDistricts.count == 1)
            await harness.lists.setUnavailable(true)
            #expect(try await self.uploadDistricts(harness, Self.districts).status == .serviceUnavailable)
            let bad = try await self.uploadDistricts(harness, "not json")
            #expect(bad.status == .unprocessableContent, "what needs no tiers is checked without distribution")
            #expect(await harness.lists.publishedPostDistricts.count == 1)
        }
    }

    /// The value of the preview's hidden `content` field.
    static func content(of page: PortalReply) -> String? {
        guard let start = page.text.range(of: #"name="content" value=""#) else { return nil }
        return String(page.text[start.upperBound...].prefix { $0 != "\"" })
    }

    @Test("a venue officer uploads venues: every row checked, confirmed, published at once, audited")
    func officerPublishesVenues() async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { (harness: PortalHarness) async throws in
            let officer = try await harness.addOfficer("venues1", roles: ["venue_officer"])
            try await harness.browse { browser in
                let start = try await harness.signIn(browser, officer)
                #expect(start.has(id: "local-risk"), "the start page links the local-risk lists")
                #expect(try await browser.get("/local-risk").status == .ok)
                let preview = try await browser.upload(
                    "/local-risk/preview",
                    ["list": "risky-venues"],
                    file: Array(Self.venues.utf8)
                )
                #expect(preview.status == .ok)
                #expect(preview.content(ofID: "entries") == "2")
                #expect(preview.content(ofID: "problems") == "0")
                #expect(preview.has(id: "row-2") && preview.has(id: "confirm"))
                #expect(await harness.lists.published.isEmpty, "a preview publishes nothing")
                let content = try #require(Self.content(of: preview))
                #expect(Base64URL.decode(content) == Array(Self.venues.utf8))
                let published = try await browser.post(
                    "/local-risk/publish",
                    ["list": "risky-venues", "content": content]
                )
                #expect(published.status == .seeOther)
                #expect(published.location == "/local-risk?published=risky-venues")
                #expect(try await browser.get("/local-risk?published=risky-venues").has(id: "published"))
            }
            let lists = await harness.lists.published.map { String(decoding: $0, as: UTF8.self) }
            #expect(lists.count == 1 && lists[0].contains(#""id":"CD3""#))
            let audit = try await harness.audit().filter { $0.action == "risky_venues_published" }
            #expect(audit.map(\.username) == ["venues1"])
            #expect(audit.map(\.details) == ["venues=2 source=portal"])
        }
    }

    @Test("a preview with bad rows names each row's problem, offers no confirmation and publishes nothing")
    func officerSeesProblems() async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { (harness: PortalHarness) async throws in
            let officer = try await harness.addOfficer("venues1", roles: ["venue_officer"])
            let csv =
                Self.venues.replacingOccurrences(of: #""CD3", "2023-11-10T13:33:03Z""#, with: #""CD2", "2023-11-10""#)
                + #""AB1", "2023-11-10T13:33:03Z", "2023-11-12T23:33:03Z", "M1", """# + "\n"
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                _ = try await browser.get("/local-risk")
                let preview = try await browser.upload(
                    "/local-risk/preview",
                    ["list": "risky-venues"],
                    file: Array(csv.utf8)
                )
                #expect(preview.status == .unprocessableContent)
                #expect(preview.content(ofID: "entries") == "3")
                #expect(preview.content(ofID: "problems") == "2")
                #expect(preview.text.contains("Date did not conform to expected format"))
                #expect(preview.text.contains("VenueId must match [CDEFHJKMPRTVWXY2345689]{1,12}"))
                #expect(!preview.has(id: "confirm") && preview.has(id: "not-publishable"))

                _ = try await browser.get("/local-risk")
                let noToken = try await browser.upload(
                    "/local-risk/preview",
                    ["list": "risky-venues"],
                    file: Array(Self.venues.utf8),
                    csrf: .missing
                )
                #expect(noToken.status == .forbidden, "a preview needs the CSRF token too")

                _ = try await browser.get("/local-risk")
                let notAList = try await browser.upload("/local-risk/preview", ["list": "risky-venues"], file: [])
                #expect(notAList.has(id: "upload-problem"))
                #expect(notAList.content(ofID: "upload-problem")?.hasSuffix("No payload") == true)

                // A confirmation of a list that is not one (edited on the way) is checked again and refused.
                _ = try await browser.get("/local-risk")
                let forged = try await browser.post(
                    "/local-risk/publish",
                    ["list": "risky-venues", "content": Base64URL.encode(Array(csv.utf8))]
                )
                #expect(forged.status == .unprocessableContent)
            }
            #expect(await harness.lists.published.isEmpty)
            #expect(try await harness.audit().filter { $0.action == "risky_venues_published" }.isEmpty)
        }
    }

    @Test("a venue officer uploads post districts: entries checked against distribution's tiers, then published")
    func officerPublishesDistricts() async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { (harness: PortalHarness) async throws in
            let officer = try await harness.addOfficer("venues1", roles: ["venue_officer"])
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                _ = try await browser.get("/local-risk")
                let bad = try await browser.upload(
                    "/local-risk/preview",
                    ["list": "risky-post-districts"],
                    file: Array(Self.districts.replacingOccurrences(of: "EN.Tier2", with: "EN.Tier7").utf8),
                    filename: "districts.json"
                )
                #expect(bad.content(ofID: "problems") == "1")
                #expect(bad.text.contains("Invalid tier indicator: EN.Tier7 for local authority: E07000240"))
                _ = try await browser.get("/local-risk")
                let good = try await browser.upload(
                    "/local-risk/preview",
                    ["list": "risky-post-districts"],
                    file: Array(Self.districts.utf8),
                    filename: "districts.json"
                )
                #expect(good.content(ofID: "entries") == "3")
                let content = try #require(Self.content(of: good))
                let published = try await browser.post(
                    "/local-risk/publish",
                    ["list": "risky-post-districts", "content": content]
                )
                #expect(published.location == "/local-risk?published=risky-post-districts")
            }
            #expect(await harness.lists.publishedPostDistricts.count == 1)
            let audit = try await harness.audit().filter { $0.action == "risky_post_districts_published" }
            #expect(audit.map(\.details) == ["postDistricts=2 localAuthorities=1 source=portal"])
        }
    }

    @Test("without the role or the CSRF token nothing is previewed or published; distribution down is 503")
    func officerRefusals() async throws {
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { (harness: PortalHarness) async throws in
            let large = ByteBuffer(repeating: UInt8(ascii: "a"), count: 100_000)
            let anonymous = try await harness.app.post(
                "/local-risk/preview",
                headers: [.contentType: "application/x-www-form-urlencoded"],
                body: large
            )
            #expect(anonymous.status == .contentTooLarge, "without a venue officer's session a form is read to 16 KB")
            let hotline = try await harness.addOfficer("hotline1", roles: ["c19hotline"])
            let content = Base64URL.encode(Array(Self.venues.utf8))
            try await harness.browse { browser in
                let start = try await harness.signIn(browser, hotline)
                #expect(!start.has(id: "local-risk"))
                #expect(try await browser.get("/local-risk").status == .forbidden)
                _ = try await browser.get("/")
                let preview = try await browser.upload(
                    "/local-risk/preview",
                    ["list": "risky-venues"],
                    file: Array(Self.venues.utf8)
                )
                #expect(preview.status == .forbidden)
                _ = try await browser.get("/")
                let publish = try await browser.post(
                    "/local-risk/publish",
                    ["list": "risky-venues", "content": content]
                )
                #expect(publish.status == .forbidden)
            }
            let officer = try await harness.addOfficer("venues1", roles: ["venue_officer"])
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                _ = try await browser.get("/local-risk")
                let noToken = try await browser.post(
                    "/local-risk/publish",
                    ["list": "risky-venues", "content": content],
                    csrf: .missing
                )
                #expect(noToken.status == .forbidden)
                _ = try await browser.get("/local-risk")
                let unknownList = try await browser.post(
                    "/local-risk/publish",
                    ["list": "everything", "content": content]
                )
                #expect(unknownList.status == .badRequest)
                await harness.lists.setUnavailable(true)
                _ = try await browser.get("/local-risk")
                let down = try await browser.post("/local-risk/publish", ["list": "risky-venues", "content": content])
                #expect(down.status == .serviceUnavailable)
            }
            #expect(await harness.lists.published.isEmpty)
            #expect(try await harness.audit().filter { $0.action.hasSuffix("_published") }.isEmpty)
        }
    }

    @Test("without NHS_ENABLED the venue officer's pages and the post districts' upload are refused")
    func off() async throws {
        try await PortalHarness.run { (harness: PortalHarness) async throws in
            let officer = try await harness.addOfficer("venues1", roles: ["venue_officer"])
            try await harness.browse { browser in
                let start = try await harness.signIn(browser, officer)
                #expect(!start.has(id: "local-risk"))
                #expect(try await browser.get("/local-risk").status == .forbidden)
            }
            #expect(try await self.uploadDistricts(harness, Self.districts).status == .notFound)
        }
    }
}

@Suite("Portal form bodies")
struct FormFieldsTests {
    @Test(
        "a multipart body: each part's name and exact bytes, the file's CRLFs kept; a body of another boundary is empty"
    )
    func multipart() {
        let file: [UInt8] = Array("a,b\r\nc,d\r\n".utf8) + [0xFF]
        let body =
            Array(
                "--XyZ\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\ntoken\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.csv\"\r\nContent-Type: text/csv\r\n\r\n"
                    .utf8
            ) + file + Array("\r\n--XyZ--\r\n".utf8)
        let form = FormFields(multipart: body, boundary: "XyZ")
        #expect(form["csrf"] == "token")
        #expect(form.bytes("file") == file)
        #expect(FormFields(multipart: body, boundary: "Other")["csrf"] == nil)
        #expect(FormFields(multipart: Array(body.prefix(60)), boundary: "XyZ")["csrf"] == nil)
    }

    @Test("the confirmation's base64url round-trips any bytes without + / or =; other text is refused")
    func base64url() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0xEF, 0xBF, 0xBF, 0x00, 0x3E]
        let text = Base64URL.encode(bytes)
        #expect(!text.contains("+") && !text.contains("/") && !text.contains("="))
        #expect(Base64URL.decode(text) == bytes)
        #expect(Base64URL.decode("+/8=") == nil)
        #expect(Base64URL.decode("not base64!") == nil)
    }
}
