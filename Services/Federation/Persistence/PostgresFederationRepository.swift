// federation-service's reads and writes in the `keys` database. All SQL binds its values.

import ENPersistence
import Logging
import NIOCore
import PostgresNIO

/// The upload mirror and the batch list in PostgreSQL.
///
/// Each job (upload, download) runs under an advisory lock held by a transaction of its own for the whole run, so two
/// replicas or an overlapping CronJob never run the same job at once; the job's writes commit one by one on other
/// connections, so what the gateway acknowledged stays recorded when a later step fails.
struct PostgresFederationRepository: FederationRepository {
    /// A job's lock (`federation-upload`, `federation-download`); its key derives from the name, so every version of
    /// the binaries agrees on it.
    static func lock(_ job: FederationJob) -> AdvisoryLock {
        AdvisoryLock(name: "federation-\(job.rawValue)")
    }

    let database: DatabasePool
    private let logger: Logger

    init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    func exclusively<Result: Sendable>(
        _ job: FederationJob,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result? {
        try await rethrowingTransactionCause {
            try await Self.lock(job).withTryLock(client: self.database.client, logger: self.logger) { _ in
                try await body()
            }
        }
    }

    // MARK: - Upload

    func pendingUploadKeys() async throws -> [UploadKey] {
        let rows = try await self.database.query(
            """
            SELECT key_data, submission_type, rolling_start_interval_number, rolling_period, submission_timestamp,
                   transmission_risk_level, origin_country, visited_countries, report_type, days_since_onset_of_symptoms
              FROM federation_upload_key
             WHERE batch_tag IS NULL AND consent_to_federation
            """,
            logger: self.logger
        )
        var keys: [UploadKey] = []
        for row in rows {
            let (data, type, start, period, hour, trl, origin, visited, report, dsos) = try row.decode(
                (ByteBuffer, String, Int32, Int32, Int64, Int32, String, [String], String, Int32).self
            )
            keys.append(
                UploadKey(
                    keyData: Array(buffer: data),
                    submissionType: type,
                    rollingStartIntervalNumber: start,
                    rollingPeriod: period,
                    submissionHour: hour,
                    transmissionRiskLevel: trl,
                    originCountry: origin,
                    visitedCountries: visited,
                    reportType: report,
                    daysSinceOnsetOfSymptoms: dsos
                )
            )
        }
        return keys
    }

    @discardableResult
    func markUploaded(_ keys: [UploadKey], tag: String) async throws -> Int {
        guard !keys.isEmpty else { return 0 }
        let rows = try await self.database.query(
            """
            WITH marked AS (
                UPDATE federation_upload_key u SET batch_tag = \(tag)
                  FROM unnest(\(keys.map { ByteBuffer(bytes: $0.keyData) })::bytea[], \(keys.map(\.submissionType))::text[])
                       AS k(key_data, submission_type)
                 WHERE u.key_data = k.key_data AND u.submission_type = k.submission_type AND u.batch_tag IS NULL
                RETURNING 1
            )
            SELECT count(*) FROM marked
            """,
            logger: self.logger
        )
        return try rows.first?.decode(Int.self) ?? 0
    }

    // MARK: - Batches

    @discardableResult
    func announce(tag: String, day: String, status: BatchStatus) async throws -> Bool {
        let rows = try await self.database.query(
            """
            WITH added AS (
                INSERT INTO federation_batch_info (batch_tag, date, status) VALUES (\(tag), \(day)::date, \(status.rawValue))
                ON CONFLICT DO NOTHING RETURNING 1
            )
            SELECT count(*) FROM added
            """,
            logger: self.logger
        )
        return try (rows.first?.decode(Int.self) ?? 0) == 1
    }

    func batches(_ status: BatchStatus) async throws -> [BatchInfo] {
        let rows = try await self.database.query(
            """
            SELECT batch_tag, to_char(date, 'YYYY-MM-DD') FROM federation_batch_info
             WHERE status = \(status.rawValue) ORDER BY announced_at, batch_tag
            """,
            logger: self.logger
        )
        return try rows.map { row in
            let (tag, day) = try row.decode((String, String).self)
            return BatchInfo(tag: tag, day: day, status: status)
        }
    }

    func setStatus(_ status: BatchStatus, tag: String) async throws {
        try await self.database.query(
            "UPDATE federation_batch_info SET status = \(status.rawValue) WHERE batch_tag = \(tag)",
            logger: self.logger
        )
    }

    func isKnown(tag: String) async throws -> Bool {
        let rows = try await self.database.query(
            "SELECT count(*) FROM federation_batch_info WHERE batch_tag = \(tag)",
            logger: self.logger
        )
        return try (rows.first?.decode(Int.self) ?? 0) > 0
    }

    @discardableResult
    func forgetBatches(before day: String) async throws -> Int {
        try await self.count(
            "WITH gone AS (DELETE FROM federation_batch_info WHERE date < \(day)::date RETURNING 1) SELECT count(*) FROM gone"
        )
    }

    @discardableResult
    func forgetBatches(of day: String) async throws -> Int {
        try await self.count(
            "WITH gone AS (DELETE FROM federation_batch_info WHERE date = \(day)::date RETURNING 1) SELECT count(*) FROM gone"
        )
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await self.database.query(query, logger: self.logger).first?.decode(Int.self) ?? 0
    }
}
