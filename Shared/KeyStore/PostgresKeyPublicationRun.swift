// A publication run's reads and deletions in the `keys` database (cwa-server §3.2, §3.9).

import Logging
import NIOCore
import PostgresNIO

/// The queries of a publication run, on the connection of the run's transaction (which holds the run lock).
struct PostgresKeyPublicationRun: KeyPublicationRun {
    let connection: PostgresConnection
    let logger: Logger

    /// Deletes keys, check-in reports and warnings submitted before `hour`; federation's copies of the keys go with
    /// them (foreign key with `ON DELETE CASCADE`).
    func deleteSubmitted(before hour: Int64) async throws -> KeyRetentionOutcome {
        KeyRetentionOutcome(
            keys: try await self.count(
                "WITH d AS (DELETE FROM diagnosis_key WHERE submission_timestamp < \(hour) RETURNING 1) SELECT count(*) FROM d"
            ),
            checkInReports: try await self.count(
                "WITH d AS (DELETE FROM check_in_protected_reports WHERE submission_timestamp < \(hour) RETURNING 1) SELECT count(*) FROM d"
            ),
            traceWarnings: try await self.count(
                "WITH d AS (DELETE FROM trace_time_interval_warning WHERE submission_timestamp < \(hour) RETURNING 1) SELECT count(*) FROM d"
            )
        )
    }

    func deleteSelfReports(before day: Int64) async throws -> Int {
        try await self.count(
            """
            WITH d AS (DELETE FROM self_report_submissions WHERE submission_date < DATE '1970-01-01' + \(Int32(clamping: day))
            RETURNING 1) SELECT count(*) FROM d
            """
        )
    }

    /// Keys with at least `minimumTRL` (every key of the NHS app), submitted in `fromHour` or later.
    ///
    /// PostgreSQL packs the keys of each submission hour and country list into one `bytea` of fixed 28-byte records
    /// (key data, then rolling start, rolling period and TRL as big-endian 32-bit integers), so a million keys
    /// arrive as a few hundred rows: decoding a row costs far more than slicing a record.
    func keys(minimumTRL: Int, fromHour: Int64) async throws -> [DistributionKey] {
        let rows = try await self.connection.query(
            """
            SELECT submission_timestamp, origin_country, array_to_string(visited_countries, ','),
                   string_agg(key_data || int4send(rolling_start_interval_number) || int4send(rolling_period)
                              || int4send(transmission_risk_level), ''::bytea)
              FROM diagnosis_key
             WHERE (transmission_risk_level >= \(minimumTRL) OR nhs_app) AND submission_timestamp >= \(fromHour)
             GROUP BY submission_timestamp, origin_country, visited_countries
            """,
            logger: self.logger
        )
        var keys: [DistributionKey] = []
        // Most groups share a handful of visited-country lists: each list is read once.
        var countryLists: [String: CountrySet] = [:]
        for try await (hour, originCode, visited, packed) in rows.decode((Int64, String, String, ByteBuffer).self) {
            let countries: CountrySet
            if let known = countryLists[visited] {
                countries = known
            } else {
                countries = CountrySet(visited.split(separator: ",").map(String.init))
                countryLists[visited] = countries
            }
            let origin = CountryLetters(originCode)
            var records = packed
            while let high = records.readInteger(as: UInt64.self), let low = records.readInteger(as: UInt64.self),
                let start = records.readInteger(as: Int32.self), let period = records.readInteger(as: Int32.self),
                let trl = records.readInteger(as: Int32.self)
            {
                keys.append(
                    DistributionKey(
                        keyData: KeyData(high: high, low: low),
                        rollingStartIntervalNumber: start,
                        rollingPeriod: period,
                        transmissionRiskLevel: trl,
                        submissionHour: hour,
                        origin: origin,
                        visited: countries,
                        listsNoCountry: visited.isEmpty
                    )
                )
            }
        }
        return keys
    }

    /// Key data (16 bytes, the table's CHECK guarantees it) and three 32-bit integers.
    private static let recordSize = 28

    /// Encrypted check-in reports submitted after `afterHour` and before `beforeHour`, in id order.
    func checkInReports(after afterHour: Int64, before beforeHour: Int64) async throws -> [StoredCheckInReport] {
        let rows = try await self.connection.query(
            """
            SELECT trace_location_id_hash, initialization_vector, encrypted_check_in_record, mac, submission_timestamp
              FROM check_in_protected_reports
             WHERE submission_timestamp > \(afterHour) AND submission_timestamp < \(beforeHour)
             ORDER BY id
            """,
            logger: self.logger
        )
        var reports: [StoredCheckInReport] = []
        for try await (hash, iv, record, mac, hour) in rows.decode(
            (ByteBuffer, ByteBuffer, ByteBuffer, ByteBuffer, Int64).self
        ) {
            reports.append(
                StoredCheckInReport(
                    locationIDHash: Array(hash.readableBytesView),
                    initializationVector: Array(iv.readableBytesView),
                    encryptedCheckInRecord: Array(record.readableBytesView),
                    mac: Array(mac.readableBytesView),
                    submissionHour: hour
                )
            )
        }
        return reports
    }

    /// Unencrypted check-ins submitted after `afterHour` and before `beforeHour`, in id order.
    func traceWarnings(after afterHour: Int64, before beforeHour: Int64) async throws -> [StoredTraceWarning] {
        let rows = try await self.connection.query(
            """
            SELECT trace_location_id, start_interval_number, period, transmission_risk_level, submission_timestamp
              FROM trace_time_interval_warning
             WHERE submission_timestamp > \(afterHour) AND submission_timestamp < \(beforeHour)
             ORDER BY id
            """,
            logger: self.logger
        )
        var warnings: [StoredTraceWarning] = []
        for try await (hash, start, period, trl, hour) in rows.decode((ByteBuffer, Int32, Int32, Int32, Int64).self) {
            warnings.append(
                StoredTraceWarning(
                    locationIDHash: Array(hash.readableBytesView),
                    startIntervalNumber: UInt32(clamping: start),
                    period: UInt32(clamping: period),
                    transmissionRiskLevel: UInt32(clamping: trl),
                    submissionHour: hour
                )
            )
        }
        return warnings
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        var total = 0
        for try await count in try await self.connection.query(query, logger: self.logger).decode(Int64.self) {
            total = Int(count)
        }
        return total
    }
}
