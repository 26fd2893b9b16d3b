// The `datadonation` database on PostgreSQL.

import ENAttestation
import ENPersistence
import Foundation
import Logging
import PostgresNIO

/// All SQL binds its values. The rules that must hold under concurrency are conditional statements inside the one
/// write transaction: a salt's first use (`ON CONFLICT DO NOTHING`, then its age), an Android ID's quota (an upsert
/// that only replaces an expired row), a device token's single use (its primary key), an API token's quota (a
/// conditional update), an OTP's single redemption (`UPDATE … WHERE redeemed_at IS NULL`).
struct PostgresDonationRepository: DonationRepository {
    static let retentionLock = AdvisoryLock(name: "datadonation.retention")

    let database: DatabasePool
    let logger: Logger

    init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    /// Encodes analytics rows for `jsonb_to_recordset`: snake-case keys, the tables' column names.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.nonConformingFloatEncodingStrategy = .throw
        return encoder
    }()

    func saltCreated(_ saltHash: String) async throws -> Date? {
        let rows = try await self.database.query(
            "SELECT created_at FROM salt WHERE salt_hash = \(saltHash)",
            logger: self.logger
        )
        return try rows.decode(Date.self).first
    }

    func apiToken(_ tokenHash: String) async throws -> StoredAPIToken? {
        let rows = try await self.database.query(
            """
            SELECT to_char(expiration_date, 'YYYY-MM-DD'), last_used_analytics, last_used_survey, last_used_self_report
            FROM api_token WHERE token_hash = \(tokenHash)
            """,
            logger: self.logger
        )
        return try rows.decode((String, Date?, Date?, Date?).self).first.map { row in
            StoredAPIToken(
                expirationDate: DonationDate(text: row.0),
                lastUsedAnalytics: row.1,
                lastUsedSurvey: row.2,
                lastUsedSelfReport: row.3
            )
        }
    }

    func deviceTokenUsed(_ tokenHash: String) async throws -> Bool {
        let rows = try await self.database.query(
            "SELECT 1 FROM device_token WHERE token_hash = \(tokenHash)",
            logger: self.logger
        )
        return !rows.isEmpty
    }

    func store(_ write: DonationWrite, policy: QuotaPolicy) async throws {
        let now = write.now
        try await rethrowingTransactionCause {
            try await self.database.withTransaction(logger: self.logger) { connection in
                if let salt = write.saltHash {
                    try await connection.query(
                        "INSERT INTO salt (salt_hash, created_at) VALUES (\(salt), \(now)) ON CONFLICT DO NOTHING",
                        logger: self.logger
                    )
                    let oldest = now.addingTimeInterval(-policy.saltValidity)
                    let fresh = try await self.count(
                        connection,
                        "SELECT count(*) FROM salt WHERE salt_hash = \(salt) AND created_at >= \(oldest)"
                    )
                    guard fresh == 1 else { throw WriteRefusal.saltRedeemed }
                }
                if let id = write.androidID {
                    if !write.earlierAndroidIDs.isEmpty {
                        let earlier = try await self.count(
                            connection,
                            """
                            SELECT count(*) FROM android_id
                            WHERE id_hash = ANY(\(write.earlierAndroidIDs)) AND expires_at > \(now)
                            """
                        )
                        guard earlier == 0 else { throw WriteRefusal.androidIDQuota }
                    }
                    let expires = now.addingTimeInterval(write.androidIDQuota)
                    let taken = try await self.count(
                        connection,
                        """
                        WITH taken AS (
                            INSERT INTO android_id (id_hash, expires_at) VALUES (\(id), \(expires))
                            ON CONFLICT (id_hash) DO UPDATE SET expires_at = excluded.expires_at
                            WHERE android_id.expires_at <= \(now)
                            RETURNING 1
                        ) SELECT count(*) FROM taken
                        """
                    )
                    guard taken == 1 else { throw WriteRefusal.androidIDQuota }
                }
                if let device = write.deviceToken {
                    let added = try await self.count(
                        connection,
                        """
                        WITH added AS (
                            INSERT INTO device_token (token_hash, created_at) VALUES (\(device), \(now))
                            ON CONFLICT DO NOTHING RETURNING 1
                        ) SELECT count(*) FROM added
                        """
                    )
                    guard added == 1 else { throw WriteRefusal.deviceTokenRedeemed }
                }
                if let token = write.apiToken {
                    try await self.spend(token, now: now, policy: policy, connection)
                }
                if let analytics = write.analytics {
                    try await self.insert(analytics, connection)
                }
                if let otp = write.otp {
                    let integrity = otp.integrity
                    let added = try await self.count(
                        connection,
                        """
                        WITH added AS (
                            INSERT INTO one_time_password (otp_hash, kind, platform, expires_at, basic_integrity,
                                cts_profile_match, evaluation_type_basic, evaluation_type_hardware_backed)
                            VALUES (\(otp.otp.hash), \(otp.kind.rawValue), \(otp.platform.rawValue), \(otp.expiresAt),
                                \(integrity?.basicIntegrity), \(integrity?.ctsProfileMatch),
                                \(integrity?.evaluationTypeBasic), \(integrity?.evaluationTypeHardwareBacked))
                            ON CONFLICT DO NOTHING RETURNING 1
                        ) SELECT count(*) FROM added
                        """
                    )
                    guard added == 1 else { throw WriteRefusal.otpExists }
                }
            }
        }
    }

    /// Inserts a new API token with this use, or spends the stored one's quota; refused when the quota is used.
    private func spend(
        _ token: APITokenUse,
        now: Date,
        policy: QuotaPolicy,
        _ connection: PostgresConnection
    ) async throws {
        let inserted = try await self.count(
            connection,
            """
            WITH added AS (
                INSERT INTO api_token (token_hash, expiration_date, created_at, last_used_analytics, last_used_survey,
                    last_used_self_report)
                VALUES (\(token.tokenHash), \(token.expirationDate.text)::date, \(now),
                    \(token.scenario == .analytics ? now : nil), \(token.scenario == .survey ? now : nil),
                    \(token.scenario == .selfReport ? now : nil))
                ON CONFLICT DO NOTHING RETURNING 1
            ) SELECT count(*) FROM added
            """
        )
        guard inserted == 0 else { return }
        let spent: Int
        switch token.scenario {
        case .analytics, .selfReport:
            // Once per interval. The column is one of the scenario's constants; the values are bound.
            let column = token.scenario == .analytics ? "last_used_analytics" : "last_used_self_report"
            let interval = token.scenario == .analytics ? policy.analyticsInterval : policy.selfReportInterval
            var query = PostgresQuery(
                unsafeSQL: """
                    WITH spent AS (
                        UPDATE api_token SET \(column) = $1 WHERE token_hash = $2
                        AND (\(column) IS NULL OR \(column) <= $3) RETURNING 1
                    ) SELECT count(*) FROM spent
                    """
            )
            query.binds.append(now)
            query.binds.append(token.tokenHash)
            query.binds.append(now.addingTimeInterval(-interval))
            spent = try await self.count(connection, query)
        case .survey:
            // Once per calendar month (UTC).
            spent = try await self.count(
                connection,
                """
                WITH spent AS (
                    UPDATE api_token SET last_used_survey = \(now) WHERE token_hash = \(token.tokenHash)
                    AND (last_used_survey IS NULL OR date_trunc('month', last_used_survey AT TIME ZONE 'UTC')
                        < date_trunc('month', \(now)::timestamptz AT TIME ZONE 'UTC')) RETURNING 1
                ) SELECT count(*) FROM spent
                """
            )
        case .errorLog:
            spent = 1
        }
        guard spent == 1 else { throw WriteRefusal.apiTokenQuota }
    }

    /// One statement per table: the rows as a JSON array, expanded by `jsonb_to_recordset`.
    private func insert(_ donation: AnalyticsDonation, _ connection: PostgresConnection) async throws {
        try await self.insert(
            donation.risk,
            into: "exposure_risk_metadata",
            columns: """
                submitted_at date, platform text, risk_level smallint, risk_level_changed boolean,
                most_recent_date_at_risk_level date, date_changed boolean, pt_risk_level smallint,
                pt_risk_level_changed boolean, pt_most_recent_date_at_risk_level date, pt_date_changed boolean,
                federal_state smallint, administrative_unit integer, age_group smallint
                """,
            connection
        )
        try await self.insert(
            donation.testResults,
            into: "test_result_metadata",
            columns: """
                submitted_at date, platform text, test_result smallint, hours_since_test_registration integer,
                risk_level_at_test_registration smallint, days_since_most_recent_date_at_risk_level integer,
                hours_since_high_risk_warning integer, pt_risk_level_at_test_registration smallint,
                pt_days_since_most_recent_date_at_risk_level integer, pt_hours_since_high_risk_warning integer,
                federal_state smallint, administrative_unit integer, age_group smallint
                """,
            connection
        )
        try await self.insert(
            donation.keySubmissions,
            into: "key_submission_metadata",
            columns: """
                submitted_at date, platform text, submitted boolean, submitted_in_background boolean,
                submitted_after_cancel boolean, submitted_after_symptom_flow boolean, advanced_consent_given boolean,
                last_submission_flow_screen smallint, hours_since_test_result integer,
                hours_since_test_registration integer, days_since_most_recent_date_at_risk_level integer,
                hours_since_high_risk_warning integer, submitted_with_teletan boolean,
                submitted_after_rapid_antigen_test boolean, pt_days_since_most_recent_date_at_risk_level integer,
                pt_hours_since_high_risk_warning integer, submitted_with_check_ins boolean, submission_type smallint,
                federal_state smallint, administrative_unit integer, age_group smallint
                """,
            connection
        )
        try await self.insert(
            donation.windows,
            into: "exposure_window",
            columns: """
                submitted_at date, platform text, context text, test_result smallint, date date,
                report_type smallint, infectiousness smallint, calibration_confidence integer,
                transmission_risk_level integer, normalized_time double precision, typical_attenuations integer[],
                min_attenuations integer[], seconds_since_last_scans integer[]
                """,
            connection
        )
        try await self.insert(
            donation.client,
            into: "client_metadata",
            columns: """
                submitted_at date, platform text, cwa_version text, os_version text, android_api_level bigint,
                enf_version bigint, app_config_etag text
                """,
            connection
        )
    }

    private func insert<Row: Encodable>(
        _ rows: [Row],
        into table: String,
        columns: String,
        _ connection: PostgresConnection
    ) async throws {
        guard !rows.isEmpty else { return }
        let json = String(decoding: try Self.encoder.encode(rows), as: UTF8.self)
        let names = columns.split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ")[0]
        }.joined(separator: ", ")
        // The table and column names are constants of this file; only the JSON is a value, and it is bound.
        var query = PostgresQuery(
            unsafeSQL:
                "INSERT INTO \(table) (\(names)) SELECT \(names) FROM jsonb_to_recordset($1::jsonb) AS r(\(columns))"
        )
        query.binds.append(json)
        try await connection.query(query, logger: self.logger)
    }

    func redeem(_ otpHash: String, kind: OTPKind, now: Date, submission: UUID?) async throws -> OTPRedemption? {
        let updated = try await self.database.query(
            """
            UPDATE one_time_password SET redeemed_at = \(now), redeemed_by = \(submission)
            WHERE otp_hash = \(otpHash) AND kind = \(kind.rawValue) AND redeemed_at IS NULL AND expires_at > \(now)
            RETURNING \(unescaped: Self.strongIntegrity)
            """,
            logger: self.logger
        )
        for strong in try updated.decode(Bool.self) {
            return OTPRedemption(state: .valid, strongClientIntegrityCheck: strong, redeemedBy: submission)
        }
        // Read in a statement of its own: one that started before a concurrent redemption committed would see the
        // password unredeemed, and could not tell this attempt's redemption from another's.
        guard let current = try await self.redemption(otpHash, kind: kind, now: now) else { return nil }
        var found = current
        switch current.state {
        case .redeemed:
            if let submission, current.redeemedBy == submission { found.state = .valid }
        case .expired:
            break
        case .valid:
            // Unredeemed and unexpired, yet not updated: not redeemable by this call either.
            found.state = .redeemed
        }
        return found
    }

    /// Whether the device that requested an OTP passed the strongest integrity checks (iOS always counts as such).
    private static let strongIntegrity = """
        (platform = 'ios' OR (coalesce(basic_integrity, false) AND coalesce(cts_profile_match, false)
            AND coalesce(evaluation_type_hardware_backed, false)))
        """

    func redemption(_ otpHash: String, kind: OTPKind, now: Date) async throws -> OTPRedemption? {
        let rows = try await self.database.query(
            """
            SELECT CASE WHEN redeemed_at IS NOT NULL THEN 'redeemed' WHEN expires_at <= \(now) THEN 'expired'
                        ELSE 'valid' END,
                   \(unescaped: Self.strongIntegrity),
                   redeemed_by
              FROM one_time_password WHERE otp_hash = \(otpHash) AND kind = \(kind.rawValue)
            """,
            logger: self.logger
        )
        return try rows.decode((String, Bool, UUID?).self).first.map { row in
            OTPRedemption(
                state: OTPState(rawValue: row.0) ?? .redeemed,
                strongClientIntegrityCheck: row.1,
                redeemedBy: row.2
            )
        }
    }

    func applyRetention(_ retention: DonationRetention, now: Date) async throws -> DonationRetentionOutcome? {
        try await Self.retentionLock.withTryLock(client: self.database.client, logger: self.logger) { connection in
            var deleted: [String: Int] = [:]
            let day = { (interval: TimeInterval) in DonationDate(now.addingTimeInterval(-interval)).text }
            for (table, keep) in [
                ("exposure_risk_metadata", retention.riskMetadata), ("test_result_metadata", retention.analytics),
                ("key_submission_metadata", retention.analytics), ("exposure_window", retention.analytics),
                ("client_metadata", retention.analytics), ("nhs_mobile_analytics", retention.analytics),
                ("nhs_mobile_analytics_event", retention.analytics),
            ] {
                var query = PostgresQuery(
                    unsafeSQL:
                        "WITH gone AS (DELETE FROM \(table) WHERE submitted_at < $1::date RETURNING 1) SELECT count(*) FROM gone"
                )
                query.binds.append(day(keep))
                deleted[table] = try await self.count(connection, query)
            }
            let otpCutoff = now.addingTimeInterval(-retention.otp)
            deleted["one_time_password"] = try await self.count(
                connection,
                """
                WITH gone AS (
                    DELETE FROM one_time_password WHERE coalesce(redeemed_at, expires_at) < \(otpCutoff) RETURNING 1
                ) SELECT count(*) FROM gone
                """
            )
            let apiCutoff = day(retention.apiTokenAfterExpiry)
            deleted["api_token"] = try await self.count(
                connection,
                "WITH gone AS (DELETE FROM api_token WHERE expiration_date < \(apiCutoff)::date RETURNING 1) SELECT count(*) FROM gone"
            )
            let deviceCutoff = now.addingTimeInterval(-retention.deviceToken)
            deleted["device_token"] = try await self.count(
                connection,
                "WITH gone AS (DELETE FROM device_token WHERE created_at < \(deviceCutoff) RETURNING 1) SELECT count(*) FROM gone"
            )
            let saltCutoff = now.addingTimeInterval(-retention.salt)
            deleted["salt"] = try await self.count(
                connection,
                "WITH gone AS (DELETE FROM salt WHERE created_at < \(saltCutoff) RETURNING 1) SELECT count(*) FROM gone"
            )
            deleted["android_id"] = try await self.count(
                connection,
                "WITH gone AS (DELETE FROM android_id WHERE expires_at <= \(now) RETURNING 1) SELECT count(*) FROM gone"
            )
            return DonationRetentionOutcome(deleted: deleted)
        }
    }

    private func count(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> Int {
        let rows = try await connection.query(query, logger: self.logger)
        for try await value in rows.decode(Int.self) { return value }
        return 0
    }
}
