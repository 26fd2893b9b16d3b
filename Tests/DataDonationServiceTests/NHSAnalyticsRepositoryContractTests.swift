// The in-memory NHS analytics keep what the PostgreSQL tables keep: every scenario stores over both and reads back.

import ENTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import DataDonationService

@Suite("NHS analytics contract (PostgreSQL and in memory)")
struct NHSAnalyticsRepositoryContractTests {
    /// A stored packet as the tests compare it: day, area, device, app version and two counters.
    struct Packet: Equatable, Sendable {
        var day, district, authority, model, app: String
        var totalBackgroundTasks, cumulativeDownloadBytes: Int64?
    }

    /// A stored event as the tests compare it: day, area, type, version and the payload's members.
    struct Event: Equatable, Sendable {
        var day, district, authority, type: String
        var version: Int
        /// The payload re-serialised with sorted keys.
        var payload: String
    }

    /// The repository and a way to read back what it holds.
    struct Stores: Sendable {
        var analytics: any NHSAnalyticsRepository
        var packets: @Sendable () async throws -> [Packet]
        var events: @Sendable () async throws -> [Event]
    }

    private func withStores(
        _ backend: RepositoryBackend,
        _ body: @Sendable (Stores) async throws -> Void
    )
        async throws
    {
        try await backend.run(
            migrating: DataDonationMigrations.group,
            inMemory: {
                let memory = InMemoryNHSAnalyticsRepository()
                return Stores(
                    analytics: memory,
                    packets: {
                        await memory.packets.map { day, packet in
                            Packet(
                                day: day,
                                district: packet.metadata.area.postalDistrict,
                                authority: packet.metadata.area.localAuthority,
                                model: packet.metadata.deviceModel,
                                app: packet.metadata.latestApplicationVersion,
                                totalBackgroundTasks: packet.counters["totalBackgroundTasks"] ?? nil,
                                cumulativeDownloadBytes: packet.counters["cumulativeDownloadBytes"] ?? nil
                            )
                        }
                    },
                    events: {
                        await memory.events.map { day, metadata, event in
                            Event(
                                day: day,
                                district: metadata.area.postalDistrict,
                                authority: metadata.area.localAuthority,
                                type: event.type,
                                version: event.version,
                                payload: Self.object(event.payload)
                            )
                        }
                    }
                )
            },
            postgres: { database in
                Stores(
                    analytics: PostgresNHSAnalyticsRepository(client: database.client, logger: database.logger),
                    packets: { try await Self.packets(database) },
                    events: { try await Self.events(database) }
                )
            },
            body
        )
    }

    private static func packets(_ database: PostgresTestDatabase) async throws -> [Packet] {
        let rows = try await database.client.query(
            """
            SELECT to_char(submitted_at, 'YYYY-MM-DD'), postal_district, local_authority, device_model,
                latest_application_version, (metrics->>'totalBackgroundTasks')::bigint,
                (metrics->>'cumulativeDownloadBytes')::bigint
            FROM nhs_mobile_analytics ORDER BY window_start
            """
        )
        var packets: [Packet] = []
        for try await row in rows.decode((String, String, String, String, String, Int64?, Int64?).self) {
            packets.append(
                Packet(
                    day: row.0,
                    district: row.1,
                    authority: row.2,
                    model: row.3,
                    app: row.4,
                    totalBackgroundTasks: row.5,
                    cumulativeDownloadBytes: row.6
                )
            )
        }
        return packets
    }

    private static func events(_ database: PostgresTestDatabase) async throws -> [Event] {
        let rows = try await database.client.query(
            """
            SELECT to_char(submitted_at, 'YYYY-MM-DD'), postal_district, local_authority, event_type, event_version,
                payload::text
            FROM nhs_mobile_analytics_event ORDER BY event_type
            """
        )
        var events: [Event] = []
        for try await row in rows.decode((String, String, String, String, Int, String).self) {
            events.append(
                Event(
                    day: row.0,
                    district: row.1,
                    authority: row.2,
                    type: row.3,
                    version: row.4,
                    payload: Self.object(row.5)
                )
            )
        }
        return events
    }

    /// `json` re-serialised with sorted keys and no spaces, as jsonb and the in-memory copy differ in layout.
    private static func object(_ json: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        else { return "not JSON: \(json)" }
        return String(decoding: data, as: UTF8.self)
    }

    private static let merge = NHSAreaMerge(table: [
        "AL2_E07000098": NHSArea(postalDistrict: "AL2_AL4_WD7", localAuthority: "E07000098")
    ])

    @Test(
        "a packet is kept merged with its day and every counter; one of an unknown area as UNKNOWN",
        arguments: RepositoryBackend.allCases
    )
    func packets(_ backend: RepositoryBackend) async throws {
        try await self.withStores(backend) { stores in
            let known = try NHSAnalyticsPacket(
                json: Data(NHSMobileAnalyticsTests.packet().utf8),
                merge: Self.merge
            )
            var unknown = try NHSAnalyticsPacket(
                json: Data(NHSMobileAnalyticsTests.packet(district: "ZZ9", metrics: "").utf8),
                merge: Self.merge
            )
            unknown.windowStart = known.windowStart.addingTimeInterval(1)
            try await stores.analytics.store(known, day: "2026-11-25")
            try await stores.analytics.store(unknown, day: "2026-11-26")
            #expect(
                try await stores.packets() == [
                    Packet(
                        day: "2026-11-25",
                        district: "AL2_AL4_WD7",
                        authority: "E07000098",
                        model: "Pixel 5",
                        app: "4.10",
                        totalBackgroundTasks: 288,
                        cumulativeDownloadBytes: 123_456_789_012
                    ),
                    Packet(
                        day: "2026-11-26",
                        district: "UNKNOWN",
                        authority: "UNKNOWN",
                        model: "Pixel 5",
                        app: "4.10",
                        totalBackgroundTasks: 0,
                        cumulativeDownloadBytes: nil
                    ),
                ]
            )
        }
    }

    @Test(
        "every event of a submission is kept with the submission's area and day",
        arguments: RepositoryBackend.allCases
    )
    func events(_ backend: RepositoryBackend) async throws {
        try await self.withStores(backend) { stores in
            let submission = try NHSAnalyticsEvents(
                json: Data(
                    NHSMobileAnalyticsTests.events(
                        #"[{"type":"a","version":1,"payload":{"riskScore":150.5,"b":[1,2]}},{"type":"b","version":2,"payload":{}}]"#
                    ).utf8
                ),
                merge: Self.merge
            )
            try await stores.analytics.store(submission, day: "2026-11-25")
            #expect(
                try await stores.events() == [
                    Event(
                        day: "2026-11-25",
                        district: "UNKNOWN",
                        authority: "UNKNOWN",
                        type: "a",
                        version: 1,
                        payload: #"{"b":[1,2],"riskScore":150.5}"#
                    ),
                    Event(
                        day: "2026-11-25",
                        district: "UNKNOWN",
                        authority: "UNKNOWN",
                        type: "b",
                        version: 2,
                        payload: "{}"
                    ),
                ]
            )
        }
    }
}
