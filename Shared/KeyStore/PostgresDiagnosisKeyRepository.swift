// The `keys` database on PostgreSQL (cwa-server §1.8, §1.10, §3.2, §3.9).

package import ENPersistence
package import Foundation
package import Logging
import NIOCore
package import PostgresNIO

/// Diagnosis keys and check-ins in PostgreSQL. All SQL binds its values.
///
/// A submission's draft is held (`pending_submission`) in one statement before its credential is spent, so an outage or
/// a full pool leaves the credential intact, and no connection is held while the credential's spender answers. When
/// the write after it fails (no connection within the lease timeout, an error), the attempt stays held, and a retry or
/// submission-service's recovery completes it (the submission service's README, "Order of work").
///
/// A publication run holds a transaction-scoped advisory lock from start to end, so two runs (a CronJob
/// overlapping itself, two replicas in serve mode) never interleave: the second finds the lock taken.
package struct PostgresDiagnosisKeyRepository: DiagnosisKeyRepository {
    /// Held by a publication run; its key derives from this name, so every version of the binaries agrees on it.
    package static let publicationLock = AdvisoryLock(name: "distribution-run")

    /// The pool; a request waits at most its lease timeout for a connection.
    private let database: DatabasePool
    private let logger: Logger

    package init(
        client: PostgresClient,
        logger: Logger,
        leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout
    ) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    package func hold(
        _ attempt: HeldAttempt,
        selfReport: (limits: SelfReportLimits, dayStartHour: Int64, keyData: [[UInt8]])?
    ) async throws -> SelfReportRefusal? {
        let draft = ByteBuffer(bytes: attempt.draft)
        guard let selfReport else {
            try await self.database.query(
                """
                INSERT INTO pending_submission (attempt, credential, credential_hash, draft, held_since, next_try)
                VALUES (\(attempt.id), \(attempt.credential.rawValue), \(attempt.credentialHash), \(draft),
                        \(attempt.heldSince), \(attempt.due))
                """,
                logger: self.logger
            )
            return nil
        }
        // The limits and the hold in one statement (cwa-server §1.4 steps 3 and 5). The day's count stops at the
        // limit, so it reads at most `maxKeysPerDay` index entries; the key lookup uses the primary key, whose first
        // column is `key_data`. Like the reference, the check and the later insert are not atomic: two self-reports
        // racing with the same keys can both pass, and the insert then stores each key once.
        let keys = selfReport.keyData.map { ByteBuffer(bytes: $0) }
        let limit = selfReport.limits.maxKeysPerDay
        let rows = try await self.database.query(
            """
            WITH checks AS (
                SELECT (SELECT count(*) FROM (SELECT 1 FROM diagnosis_key WHERE submission_timestamp >= \(selfReport.dayStartHour)
                                               LIMIT \(limit)) AS today) >= \(limit) AS day_full,
                       EXISTS (SELECT 1 FROM diagnosis_key WHERE key_data = ANY(\(keys)::bytea[])) AS keys_known
            ), held AS (
                INSERT INTO pending_submission (attempt, credential, credential_hash, draft, held_since, next_try)
                SELECT \(attempt.id), \(attempt.credential.rawValue), \(attempt.credentialHash), \(draft),
                       \(attempt.heldSince), \(attempt.due)
                  FROM checks WHERE NOT day_full AND NOT keys_known
                RETURNING 1
            )
            SELECT day_full, keys_known FROM checks
            """,
            logger: self.logger
        )
        guard let row = rows.first else { return nil }
        let (dailyLimitReached, keysExist) = try row.decode((Bool, Bool).self)
        if dailyLimitReached { return .dailyLimitReached }
        return keysExist ? .keysExist : nil
    }

    package func complete(
        _ attempt: UUID,
        credentialHash: String,
        writing submission: KeySubmission
    ) async throws -> KeySubmissionOutcome? {
        try await rethrowingTransactionCause {
            try await self.database.withTransaction(logger: self.logger) { connection in
                // Whoever deletes the attempt writes it: of a retry and the recovery completing the same attempt at
                // once, the second waits for the first's commit and finds nothing.
                let taken = try await connection.query(
                    "DELETE FROM pending_submission WHERE attempt = \(attempt) RETURNING 1",
                    logger: self.logger
                )
                var found = false
                for try await _ in taken { found = true }
                guard found else { return nil }
                try await connection.query(
                    "DELETE FROM pending_submission WHERE credential_hash = \(credentialHash)",
                    logger: self.logger
                )
                return try await self.write(submission, connection)
            }
        }
    }

    package func storeFederated(_ keys: [FederatedKey], submissionHour: Int64) async throws -> Int {
        guard !keys.isEmpty else { return 0 }
        let query = Self.insertion(
            keys.map { ($0.row, $0.originCountry, $0.visitedCountries) },
            submissionType: FederatedKey.submissionType,
            submissionHour: submissionHour,
            consentToFederation: false,
            fromNHSApp: false
        )
        return try await self.database.query(query, logger: self.logger).first?.decode(Int.self) ?? 0
    }

    package func release(_ attempt: UUID) async throws {
        try await self.database.query("DELETE FROM pending_submission WHERE attempt = \(attempt)", logger: self.logger)
    }

    package func postpone(_ attempt: UUID, until due: Date) async throws {
        try await self.database.query(
            "UPDATE pending_submission SET next_try = \(due) WHERE attempt = \(attempt)",
            logger: self.logger
        )
    }

    package func dueAttempts(at now: Date, limit: Int) async throws -> [HeldAttempt] {
        let kinds = [HeldCredential.tan, .nhsToken, .otp].map(\.rawValue)
        let rows = try await self.database.query(
            """
            SELECT \(unescaped: Self.attemptColumns) FROM pending_submission
             WHERE next_try <= \(now) AND credential = ANY(\(kinds)::text[])
             ORDER BY next_try LIMIT \(limit)
            """,
            logger: self.logger
        )
        return try rows.decode(AttemptRow.self).compactMap(Self.attempt)
    }

    package func heldAttempt(_ id: UUID) async throws -> HeldAttempt? {
        let rows = try await self.database.query(
            "SELECT \(unescaped: Self.attemptColumns) FROM pending_submission WHERE attempt = \(id)",
            logger: self.logger
        )
        return try rows.decode(AttemptRow.self).compactMap(Self.attempt).first
    }

    package func heldAttemptCount() async throws -> HeldAttemptCount {
        let rows = try await self.database.query(
            "SELECT count(*), min(held_since) FROM pending_submission",
            logger: self.logger
        )
        let (count, oldest) = try rows.decode((Int, Date?).self).first ?? (0, nil)
        return HeldAttemptCount(count: count, oldest: oldest)
    }

    private static let attemptColumns = "attempt, credential, credential_hash, draft, held_since, next_try"
    private typealias AttemptRow = (UUID, String, String, ByteBuffer, Date, Date)

    private static func attempt(_ row: AttemptRow) -> HeldAttempt? {
        guard let credential = HeldCredential(rawValue: row.1) else { return nil }
        return HeldAttempt(
            id: row.0,
            credential: credential,
            credentialHash: row.2,
            draft: Array(row.3.readableBytesView),
            heldSince: row.4,
            due: row.5
        )
    }

    package func withPublicationRun<Result: Sendable>(
        _ body: @Sendable (any KeyPublicationRun) async throws -> Result
    ) async throws -> Result? {
        try await rethrowingTransactionCause {
            try await Self.publicationLock.withTryLock(client: self.database.client, logger: self.logger) {
                connection in
                try await body(PostgresKeyPublicationRun(connection: connection, logger: self.logger))
            }
        }
    }

    // MARK: - Writing a submission

    private func write(
        _ submission: KeySubmission,
        _ connection: PostgresConnection
    ) async throws -> KeySubmissionOutcome {
        var outcome = KeySubmissionOutcome()
        outcome.keys = try await self.insertKeys(submission, connection)
        if submission.selfReport != nil { try await self.insertSelfReport(submission, connection) }
        guard !submission.keys.isEmpty else {
            outcome.protectedReports = try await self.insertProtectedReports(submission, connection)
            outcome.traceWarnings = try await self.insertTraceWarnings(submission, connection)
            return outcome
        }
        guard !submission.protectedReports.isEmpty || !submission.traceWarnings.isEmpty else { return outcome }
        try await connection.query("SAVEPOINT check_ins", logger: self.logger)
        do {
            outcome.protectedReports = try await self.insertProtectedReports(submission, connection)
            outcome.traceWarnings = try await self.insertTraceWarnings(submission, connection)
            try await connection.query("RELEASE SAVEPOINT check_ins", logger: self.logger)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            try await connection.query("ROLLBACK TO SAVEPOINT check_ins", logger: self.logger)
            self.logger.error("Check-ins not stored; the keys are", metadata: ErrorMetadata.of(error))
            outcome.protectedReports = 0
            outcome.traceWarnings = 0
            outcome.checkInsStored = false
        }
        return outcome
    }

    private func insertKeys(_ submission: KeySubmission, _ connection: PostgresConnection) async throws -> Int {
        guard !submission.keys.isEmpty else { return 0 }
        let query = Self.insertion(
            submission.keys.map { ($0, submission.originCountry, submission.visitedCountries) },
            submissionType: submission.submissionType,
            submissionHour: submission.submissionHour,
            consentToFederation: submission.consentToFederation,
            fromNHSApp: submission.fromNHSApp
        )
        return try await self.count(query, connection)
    }

    /// One statement for all keys, each with its origin and visited countries: the one insertion of `diagnosis_key`
    /// (submissions and federated keys). A key is skipped when the same key data exists as a PCR key (a PCR key is
    /// never overwritten by a rapid-test one) and, through `ON CONFLICT DO NOTHING`, when the same key data and type
    /// exist; neither case is an error or logged by PostgreSQL. Visited countries travel joined by commas (codes are
    /// two letters).
    private static func insertion(
        _ keys: [(row: DiagnosisKeyRow, origin: String, visited: [String])],
        submissionType: String,
        submissionHour: Int64,
        consentToFederation: Bool,
        fromNHSApp: Bool
    ) -> PostgresQuery {
        let rows = keys.map(\.row)
        return """
            WITH candidate AS (
                SELECT * FROM unnest(\(rows.map { ByteBuffer(bytes: $0.keyData) })::bytea[], \(rows.map(\.rollingStartIntervalNumber))::integer[],
                                     \(rows.map(\.rollingPeriod))::integer[], \(rows.map(\.transmissionRiskLevel))::integer[],
                                     \(rows.map(\.daysSinceOnsetOfSymptoms))::integer[], \(rows.map(\.reportType))::text[],
                                     \(keys.map(\.origin))::text[], \(keys.map { $0.visited.joined(separator: ",") })::text[])
                    AS k(key_data, rolling_start_interval_number, rolling_period, transmission_risk_level, days_since_onset_of_symptoms,
                         report_type, origin_country, visited)
            ), inserted AS (
                INSERT INTO diagnosis_key (
                    key_data, submission_type, rolling_start_interval_number, rolling_period, submission_timestamp,
                    transmission_risk_level, origin_country, visited_countries, report_type, days_since_onset_of_symptoms,
                    consent_to_federation, nhs_app
                )
                SELECT c.key_data, \(submissionType), c.rolling_start_interval_number, c.rolling_period, \(submissionHour),
                       c.transmission_risk_level, c.origin_country, string_to_array(c.visited, ','), c.report_type,
                       c.days_since_onset_of_symptoms, \(consentToFederation), \(fromNHSApp)
                  FROM candidate c
                 WHERE NOT EXISTS (
                       SELECT 1 FROM diagnosis_key d WHERE d.key_data = c.key_data AND d.submission_type = 'SUBMISSION_TYPE_PCR_TEST')
                ON CONFLICT DO NOTHING
                RETURNING 1
            )
            SELECT count(*) FROM inserted
            """
    }

    /// A self-report's row: its type and the UTC day of its submission hour (`date + integer` adds days).
    private func insertSelfReport(_ submission: KeySubmission, _ connection: PostgresConnection) async throws {
        let day = Int32(clamping: submission.submissionHour / 24)
        try await connection.query(
            """
            INSERT INTO self_report_submissions (submission_type, submission_date)
            VALUES (\(submission.submissionType), DATE '1970-01-01' + \(day))
            """,
            logger: self.logger
        )
    }

    /// Encrypted check-ins as sent; a report stored before (a retried upload) is not stored twice.
    private func insertProtectedReports(
        _ submission: KeySubmission,
        _ connection: PostgresConnection
    ) async throws -> Int {
        guard !submission.protectedReports.isEmpty else { return 0 }
        let reports = submission.protectedReports
        let query: PostgresQuery = """
            WITH inserted AS (
                INSERT INTO check_in_protected_reports (trace_location_id_hash, initialization_vector, encrypted_check_in_record, mac, submission_timestamp)
                SELECT r.hash, r.iv, r.record, r.mac, \(submission.submissionHour)
                  FROM unnest(\(reports.map { ByteBuffer(bytes: $0.locationIDHash) })::bytea[], \(reports.map { ByteBuffer(bytes: $0.iv) })::bytea[],
                              \(reports.map { ByteBuffer(bytes: $0.encryptedCheckInRecord) })::bytea[], \(reports.map { ByteBuffer(bytes: $0.mac) })::bytea[])
                       AS r(hash, iv, record, mac)
                ON CONFLICT DO NOTHING
                RETURNING 1
            )
            SELECT count(*) FROM inserted
            """
        return try await self.count(query, connection)
    }

    private func insertTraceWarnings(
        _ submission: KeySubmission,
        _ connection: PostgresConnection
    ) async throws -> Int {
        guard !submission.traceWarnings.isEmpty else { return 0 }
        let rows = submission.traceWarnings
        let query: PostgresQuery = """
            WITH inserted AS (
                INSERT INTO trace_time_interval_warning (
                    trace_location_id, start_interval_number, period, transmission_risk_level, submission_timestamp, submission_type)
                SELECT w.location, w.start, w.period, w.trl, \(submission.submissionHour), \(submission.submissionType)
                  FROM unnest(\(rows.map { ByteBuffer(bytes: $0.traceLocationID) })::bytea[], \(rows.map(\.startIntervalNumber))::integer[],
                              \(rows.map(\.period))::integer[], \(rows.map(\.transmissionRiskLevel))::integer[])
                       AS w(location, start, period, trl)
                RETURNING 1
            )
            SELECT count(*) FROM inserted
            """
        return try await self.count(query, connection)
    }

    private func count(_ query: PostgresQuery, _ connection: PostgresConnection) async throws -> Int {
        for try await count in try await connection.query(query, logger: self.logger).decode(Int.self) { return count }
        return 0
    }
}
