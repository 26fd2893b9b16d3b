// NHS mobile analytics (nhs §10) on PostgreSQL: the daily packet (not signed) and events (signed), the postcode
// district × local authority merge before anything is stored, refusals that store nothing, and the export.

import ENCrypto
import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import PostgresNIO
import Testing

@testable import DataDonationService

@Suite("NHS mobile analytics (PostgreSQL)", .postgres(DataDonationMigrations.group))
struct NHSMobileAnalyticsTests {
    static func packet(
        district: String = "AL2",
        authority: String? = "E07000098",
        metrics: String =
            #""totalBackgroundTasks":288,"receivedActiveIpcToken":1,"cumulativeDownloadBytes":123456789012"#
    ) -> String {
        let authorityField = authority.map { #","localAuthority":"\#($0)""# } ?? ""
        return """
            {"metadata":{"postalDistrict":"\(district)","deviceModel":"Pixel 5","operatingSystemVersion":"33",\
            "latestApplicationVersion":"4.10"\(authorityField)},\
            "analyticsWindow":{"startDate":"2026-11-24T00:00:00Z","endDate":"2026-11-25T00:00:00Z"},\
            "metrics":{\(metrics)},"includesMultipleApplicationVersions":false}
            """
    }

    static func events(
        _ events: String = #"[{"type":"exposureWindow","version":1,"payload":{"riskScore":150.5}}]"#
    )
        -> String
    {
        #"{"metadata":{"postalDistrict":"AL1","deviceModel":"iPhone13,2","operatingSystemVersion":"17.1","latestApplicationVersion":"4.10","localAuthority":"E07000240"},"events":\#(events)}"#
    }

    func post(
        _ service: DonationService,
        _ path: String,
        _ json: String,
        key: NHSAPIKeyCredential? = TestNHS.mobile
    ) async throws -> RouterReply {
        var headers: HTTPFields = [.contentType: "application/json", .nhsRequestID: "req-1"]
        if let key { headers[.authorization] = key.authorization }
        return try await service.app.post(path, headers: headers, body: ByteBuffer(string: json))
    }

    @Test("a daily packet is stored merged (AL2 in E07000098 → AL2_AL4_WD7), all 69 counters, 200 empty, unsigned")
    func packetStoredMerged() async throws {
        try await DonationWorld().withService(TestNHS.settings()) { (service: DonationService) async throws in
            let reply = try await self.post(service, "/submission/mobile-analytics", Self.packet())
            #expect(reply.status == .ok)
            #expect(reply.body.readableBytes == 0)
            #expect(reply.headers[.amzMetaSignature] == nil)
            let rows = try await service.database.client.query(
                """
                SELECT postal_district, local_authority, device_model, metrics::text,
                    (SELECT count(*) FROM jsonb_object_keys(metrics))::int FROM nhs_mobile_analytics
                """
            )
            var seen = 0
            for try await (district, authority, model, metrics, keys) in rows.decode(
                (String, String, String, String, Int).self
            ) {
                seen += 1
                #expect(district == "AL2_AL4_WD7" && authority == "E07000098" && model == "Pixel 5")
                #expect(keys == 69)
                #expect(metrics.contains(#""totalBackgroundTasks": 288"#))
                #expect(metrics.contains(#""cumulativeDownloadBytes": 123456789012"#))
                #expect(metrics.contains(#""checkedIn": 0"#), "a missing required count is 0")
                #expect(metrics.contains(#""startedIsolation": null"#), "a missing optional count is null")
            }
            #expect(seen == 1)
            #expect(try await service.count("nhs_mobile_analytics", where: "postal_district = 'AL2'") == 0)
        }
    }

    @Test("a pair outside the table is stored as UNKNOWN/UNKNOWN; without an authority the <district>_ row decides")
    func unknownAreas() async throws {
        try await DonationWorld().withService(TestNHS.settings()) { (service: DonationService) async throws in
            #expect(
                try await self.post(service, "/submission/mobile-analytics", Self.packet(district: "ZZ99")).status
                    == .ok
            )
            #expect(
                try await self.post(service, "/submission/mobile-analytics", Self.packet(authority: nil)).status == .ok
            )
            #expect(
                try await service.count(
                    "nhs_mobile_analytics",
                    where: "postal_district = 'UNKNOWN' AND local_authority = 'UNKNOWN'"
                ) == 1
            )
            #expect(
                try await service.count(
                    "nhs_mobile_analytics",
                    where: "postal_district = 'AL2' AND local_authority = 'UNKNOWN'"
                ) == 1,
                "AL2 without an authority: the table's AL2_ row"
            )
        }
        let merge = try NHSAreaMerge(
            csv:
                "\"Postcode_District_LAD_ID\",\"LAD20CD\",\"Merged_Postcode_District\"\n\"B1_\",\"-\",\"B1_B2\"\n"
        )
        #expect(
            merge.merge(postalDistrict: "B1", localAuthority: "E9")
                == NHSArea(postalDistrict: "B1_B2", localAuthority: "UNKNOWN")
        )
        #expect(merge.merge(postalDistrict: "B3", localAuthority: nil) == .unknown)
        let bundled = try NHSAreaMerge.bundled()
        #expect(bundled.table.count == 7606 - 1, "every row but the empty pair's")
        #expect(
            bundled.merge(postalDistrict: "AB1", localAuthority: nil)
                == NHSArea(postalDistrict: "TERMINATED", localAuthority: "UNKNOWN")
        )
    }

    @Test(
        "refusals store nothing: not JSON, a null required count, a negative or boolean count, no metadata (400); no key (403)",
        arguments: [
            "not json", Self.packet(metrics: #""checkedIn":null"#), Self.packet(metrics: #""startedIsolation":-1"#),
            Self.packet(metrics: #""startedIsolation":true"#), Self.packet(metrics: #""checkedIn":1.5"#),
            #"{"analyticsWindow":{},"metrics":{}}"#, Self.packet(metrics: #""checkedIn":3000000000"#),
            Self.packet(district: #"AL2\u0000"#),
        ]
    )
    func refusals(body: String) async throws {
        try await DonationWorld().withService(TestNHS.settings()) { (service: DonationService) async throws in
            let reply = try await self.post(service, "/submission/mobile-analytics", body)
            #expect(reply.status == .badRequest)
            #expect(reply.text.hasPrefix("invalid analytics packet: "))
            #expect(!reply.text.contains("AL2"), "the answer does not echo the area")
            #expect(
                try await self.post(service, "/submission/mobile-analytics", Self.packet(), key: nil).status
                    == .forbidden
            )
            #expect(try await service.count("nhs_mobile_analytics") == 0)
        }
    }

    @Test("events: signed 200, one row per event with its own id, merged; bad events 400 signed; switched off 503")
    func events() async throws {
        try await DonationWorld().withService(TestNHS.settings()) { (service: DonationService) async throws in
            let two =
                #"[{"type":"exposureWindow","version":1,"payload":{"a":1}},{"type":"exposureWindowPositiveTest","version":2,"payload":{"b":2}}]"#
            let reply = try await self.post(service, "/submission/mobile-analytics-events", Self.events(two))
            #expect(reply.status == .ok)
            #expect(throws: Never.self) {
                try TestNHS.verifier.verifyAnswer(
                    signature: reply.headers[.amzMetaSignature],
                    date: reply.headers[.amzMetaSignatureDate],
                    requestID: "req-1",
                    method: "POST",
                    path: "/submission/mobile-analytics-events",
                    body: reply.body.readableBytesView
                )
            }
            #expect(
                try await service.count(
                    "nhs_mobile_analytics_event",
                    where: "postal_district = 'AL1' AND local_authority = 'E07000240'"
                ) == 2
            )
            #expect(
                try await service.count(
                    "nhs_mobile_analytics_event",
                    where: "event_type = 'exposureWindowPositiveTest' AND event_version = 2 AND payload = '{\"b\": 2}'"
                ) == 1
            )
            #expect(
                try await service.count(
                    "nhs_mobile_analytics_event",
                    where: "true GROUP BY event_id HAVING count(*) > 1"
                ) == 0
            )

            for bad in [
                #"[]"#, #"[{"type":"x","version":1}]"#, #"[{"type":"x","version":"1","payload":{}}]"#,
                #"[{"type":"x","version":1,"payload":{"a":"\u0000"}}]"#,
            ] {
                let refused = try await self.post(service, "/submission/mobile-analytics-events", Self.events(bad))
                #expect(refused.status == .badRequest)
                #expect(refused.headers[.amzMetaSignature] != nil)
            }
            #expect(try await service.count("nhs_mobile_analytics_event") == 2)
        }
        try await DonationWorld().withService(TestNHS.settings(["NHS_ANALYTICS_EVENTS_ENABLED": "false"])) {
            (service: DonationService) async throws in
            #expect(
                try await self.post(service, "/submission/mobile-analytics-events", Self.events()).status
                    == .serviceUnavailable
            )
        }
    }

    @Test("without NHS_ENABLED the routes are not mounted (404)")
    func offByDefault() async throws {
        try await DonationWorld().withService { (service: DonationService) async throws in
            #expect(try await self.post(service, "/submission/mobile-analytics", Self.packet()).status == .notFound)
        }
    }

    @Test("retention deletes NHS analytics older than RETENTION_ANALYTICS; the export includes both tables")
    func retentionAndExport() async throws {
        try await DonationWorld().withService(TestNHS.settings()) { (service: DonationService) async throws in
            #expect(try await self.post(service, "/submission/mobile-analytics", Self.packet()).status == .ok)
            #expect(try await self.post(service, "/submission/mobile-analytics-events", Self.events()).status == .ok)
            let exported = try await ExportTests.export(
                ["--since", "2000-01-01", "--format", "json"],
                database: service.database
            )
            #expect(exported.code == 0 && exported.lines == 2)
            let outcome = try await service.runtime.dependencies.repository.applyRetention(
                service.runtime.configuration.retention,
                now: Date().addingTimeInterval(30 * 86_400)
            )
            #expect(outcome?.deleted["nhs_mobile_analytics"] == 1)
            #expect(outcome?.deleted["nhs_mobile_analytics_event"] == 1)
        }
    }
}
