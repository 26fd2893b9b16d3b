// The `keys` database on PostgreSQL (cwa-server §1.8, §1.10, §3.2, §3.9).

package import ENPersistence
package import Logging
import NIOCore
package import PostgresNIO

/// Diagnosis keys and check-ins in PostgreSQL. All SQL binds its values.
///
/// The database is proven reachable, and a connection free, before `authorize` spends the TAN, so an outage or a
/// full pool leaves the TAN intact; no connection is held while `authorize` waits on verification-service. After
/// `authorize` the write waits for a connection without the lease timeout. A failure between the TAN check and the
/// commit still loses the TAN, as in the reference (the submission service's README, "Order of work").
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

    package func store<Refusal: Error>(
        _ submission: KeySubmission,
        authorize: () async throws(Refusal) -> Void
    ) async throws(KeySubmissionFailure<Refusal>) -> KeySubmissionOutcome {
        let refusal: SelfReportRefusal?
        do {
            // One round trip on a connection returned at once: an outage or a full pool fails here, before the TAN
            // is used, and no connection waits on the TAN check.
            refusal = try await self.admit(submission)
        } catch {
            throw .database(error, afterAuthorization: false)
        }
        if let refusal { throw .selfReportRefused(refusal) }
        do {
            try await authorize()
        } catch {
            throw .refused(error)
        }
        return try await self.commit(submission, refusal: Refusal.self)
    }

    package func store<Refusal: Error>(
        authorizing authorize: () async throws(Refusal) -> KeySubmission
    ) async throws(KeySubmissionFailure<Refusal>) -> KeySubmissionOutcome {
        do {
            try await self.database.query("SELECT 1", logger: self.logger)
        } catch {
            throw .database(error, afterAuthorization: false)
        }
        let submission: KeySubmission
        do {
            submission = try await authorize()
        } catch {
            throw .refused(error)
        }
        precondition(submission.selfReport == nil, "a self-report's limits are checked before its authorisation")
        return try await self.commit(submission, refusal: Refusal.self)
    }

    /// Writes an authorised submission in one transaction. The TAN (or token) is used up now: the connection is waited
    /// for as long as it takes instead of giving up after the lease timeout, which would lose it.
    private func commit<Refusal: Error>(
        _ submission: KeySubmission,
        refusal: Refusal.Type
    ) async throws(KeySubmissionFailure<Refusal>) -> KeySubmissionOutcome {
        do {
            return try await rethrowingTransactionCause {
                try await self.database.client.withTransaction(logger: self.logger) { connection in
                    try await self.write(submission, connection)
                }
            }
        } catch {
            throw .database(error, afterAuthorization: true)
        }
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

    /// The round trip before the authorisation: `SELECT 1` for most submissions; for a self-report, its limits in
    /// the same single statement (cwa-server §1.4 steps 3 and 5). The day's count stops at the limit, so it reads at
    /// most `maxKeysPerDay` index entries; the key lookup uses the primary key, whose first column is `key_data`.
    ///
    /// Like the reference, the check and the later insert are not atomic: two self-reports racing with the same keys
    /// can both pass, and the insert then stores each key once.
    private func admit(_ submission: KeySubmission) async throws -> SelfReportRefusal? {
        guard let limits = submission.selfReport else {
            try await self.database.query("SELECT 1", logger: self.logger)
            return nil
        }
        let keys = submission.keys.map { ByteBuffer(bytes: $0.keyData) }
        let rows = try await self.database.query(
            """
            SELECT (SELECT count(*) FROM (SELECT 1 FROM diagnosis_key WHERE submission_timestamp >= \(submission.dayStartHour)
                                           LIMIT \(limits.maxKeysPerDay)) AS today) >= \(limits.maxKeysPerDay),
                   EXISTS (SELECT 1 FROM diagnosis_key WHERE key_data = ANY(\(keys)::bytea[]))
            """,
            logger: self.logger
        )
        guard let row = rows.first else { return nil }
        let (dailyLimitReached, keysExist) = try row.decode((Bool, Bool).self)
        if dailyLimitReached { return .dailyLimitReached }
        return keysExist ? .keysExist : nil
    }

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

    /// One statement for all keys. A key is skipped when the same key data exists as a PCR key (a PCR key is
    /// never overwritten by a rapid-test one) and, through `ON CONFLICT DO NOTHING`, when the same key data and
    /// type exist; neither case is an error or logged by PostgreSQL.
    private func insertKeys(_ submission: KeySubmission, _ connection: PostgresConnection) async throws -> Int {
        guard !submission.keys.isEmpty else { return 0 }
        let keys = submission.keys
        let query: PostgresQuery = """
            WITH candidate AS (
                SELECT * FROM unnest(\(keys.map { ByteBuffer(bytes: $0.keyData) })::bytea[], \(keys.map(\.rollingStartIntervalNumber))::integer[],
                                     \(keys.map(\.rollingPeriod))::integer[], \(keys.map(\.transmissionRiskLevel))::integer[],
                                     \(keys.map(\.daysSinceOnsetOfSymptoms))::integer[], \(keys.map(\.reportType))::text[])
                    AS k(key_data, rolling_start_interval_number, rolling_period, transmission_risk_level, days_since_onset_of_symptoms, report_type)
            ), inserted AS (
                INSERT INTO diagnosis_key (
                    key_data, submission_type, rolling_start_interval_number, rolling_period, submission_timestamp,
                    transmission_risk_level, origin_country, visited_countries, report_type, days_since_onset_of_symptoms,
                    consent_to_federation, nhs_app
                )
                SELECT c.key_data, \(submission.submissionType), c.rolling_start_interval_number, c.rolling_period, \(submission.submissionHour),
                       c.transmission_risk_level, \(submission.originCountry), \(submission.visitedCountries)::text[], c.report_type,
                       c.days_since_onset_of_symptoms, \(submission.consentToFederation), \(submission.fromNHSApp)
                  FROM candidate c
                 WHERE NOT EXISTS (
                       SELECT 1 FROM diagnosis_key d WHERE d.key_data = c.key_data AND d.submission_type = 'SUBMISSION_TYPE_PCR_TEST')
                ON CONFLICT DO NOTHING
                RETURNING 1
            )
            SELECT count(*) FROM inserted
            """
        return try await self.count(query, connection)
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
