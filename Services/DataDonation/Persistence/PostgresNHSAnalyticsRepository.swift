// NHS mobile analytics in the `datadonation` database.

import ENPersistence
import Foundation
import Logging
import PostgresNIO

/// `nhs_mobile_analytics` and `nhs_mobile_analytics_event` (migration 0002): the submission day, never its time.
struct PostgresNHSAnalyticsRepository: NHSAnalyticsRepository {
    let database: DatabasePool
    let logger: Logger

    init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    func store(_ packet: NHSAnalyticsPacket, day: String) async throws {
        let metadata = packet.metadata
        try await self.database.query(
            """
            INSERT INTO nhs_mobile_analytics (submitted_at, window_start, window_end, postal_district, local_authority,
                device_model, operating_system_version, latest_application_version,
                includes_multiple_application_versions, metrics)
            VALUES (\(day)::date, \(packet.windowStart), \(packet.windowEnd), \(metadata.area.postalDistrict),
                \(metadata.area.localAuthority), \(metadata.deviceModel), \(metadata.operatingSystemVersion),
                \(metadata.latestApplicationVersion), \(packet.includesMultipleApplicationVersions),
                \(packet.countersJSON)::jsonb)
            """,
            logger: self.logger
        )
    }

    /// Every event in one statement, each with a new random id.
    func store(_ submission: NHSAnalyticsEvents, day: String) async throws {
        let metadata = submission.metadata
        try await self.database.query(
            """
            INSERT INTO nhs_mobile_analytics_event (submitted_at, event_id, postal_district, local_authority,
                device_model, operating_system_version, latest_application_version, event_type, event_version, payload)
            SELECT \(day)::date, gen_random_uuid(), \(metadata.area.postalDistrict), \(metadata.area.localAuthority),
                \(metadata.deviceModel), \(metadata.operatingSystemVersion), \(metadata.latestApplicationVersion),
                e.type, e.version, e.payload::jsonb
            FROM unnest(\(submission.events.map(\.type))::text[], \(submission.events.map(\.version))::int[],
                \(submission.events.map(\.payload))::text[]) AS e(type, version, payload)
            """,
            logger: self.logger
        )
    }
}
