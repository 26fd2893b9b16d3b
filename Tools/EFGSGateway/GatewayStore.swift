// The `efgs` database of the rehearsal gateway. All SQL binds its values.

import ENCrypto
import ENFederation
import ENModels
import ENPersistence
import Foundation
import Logging
import NIOCore
import PostgresNIO

/// A registered certificate of a country.
struct CountryCertificate: Sendable, Equatable {
    enum Kind: String, Sendable, CaseIterable {
        case authentication = "AUTHENTICATION"
        case signing = "SIGNING"
        case callback = "CALLBACK"
    }

    var thumbprint: String
    var kind: Kind
    var country: String
    var revoked: Bool
    var pem: String
    /// The trust anchor's signature of the certificate (Base64 CMS), when the row was registered with one.
    var signature: String? = nil
}

/// An upload batch as a download's audit describes it.
struct UploadBatchRecord: Sendable {
    var tag: String
    var country: String
    var uploaderThumbprint: String
    var signingThumbprint: String
    var signature: String
    var amount: Int
    var uploadedAt: Date
}

/// A download batch: its day and the tag after it.
struct DownloadBatchRecord: Sendable, Equatable {
    var tag: String
    var day: String
    var nextTag: String?
}

/// The outcome of storing an upload.
enum StoredUpload: Sendable, Equatable {
    case stored
    /// The batch tag was used before.
    case duplicateTag
    /// Some keys exist already (by payload hash): nothing was stored; the indices of those keys.
    case duplicateKeys([Int])
}

struct GatewayStore: Sendable {
    static let batchingLock = AdvisoryLock(name: "efgs-batching")

    let database: DatabasePool
    /// Applied to every certificate row read; rows that fail it are not believed.
    let integrity: CertificateIntegrity
    private let logger: Logger

    init(
        client: PostgresClient,
        logger: Logger,
        integrity: CertificateIntegrity = CertificateIntegrity(),
        leaseTimeout: Duration = DatabasePool.defaultLeaseTimeout
    ) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.integrity = integrity
        self.logger = logger.cappedForDatabase
    }

    // MARK: - Certificates

    /// The registered certificate of `kind` with `thumbprint`, when its row passes the integrity check.
    func certificate(thumbprint: String, kind: CountryCertificate.Kind) async throws -> CountryCertificate? {
        let rows = try await self.certificateRows(
            "WHERE thumbprint = \(thumbprint) AND type = \(kind.rawValue)"
        )
        return await self.intact(rows).first
    }

    /// The registered certificates (of `country`, of `kind`) whose rows pass the integrity check: only the rows asked
    /// for are read and checked.
    func certificates(country: String? = nil, kind: CountryCertificate.Kind? = nil) async throws -> [CountryCertificate]
    {
        await self.intact(
            try await self.certificateRows(
                """
                WHERE (\(country == nil) OR country = \(country ?? "")) AND (\(kind == nil) OR type = \(kind?.rawValue ?? ""))
                ORDER BY country, type, created_at
                """
            )
        )
    }

    /// The registered certificates with these thumbprints (of any kind) whose rows pass the integrity check.
    func certificates(thumbprints: [String]) async throws -> [CountryCertificate] {
        await self.intact(try await self.certificateRows("WHERE thumbprint = ANY(\(thumbprints))"))
    }

    /// Every row (of `country`), checked or not: for the operator's list.
    func allCertificates(country: String? = nil) async throws -> [CountryCertificate] {
        try await self.certificateRows(
            "WHERE \(country == nil) OR country = \(country ?? "") ORDER BY country, type, created_at"
        )
    }

    private func certificateRows(_ condition: PostgresQuery) async throws -> [CountryCertificate] {
        let query = PostgresQuery(
            unsafeSQL: "SELECT thumbprint, type, country, revoked, raw_pem, signature FROM certificate "
                + condition.sql,
            binds: condition.binds
        )
        return try await self.database.query(query, logger: self.logger).compactMap { row in
            let (thumbprint, type, country, revoked, pem, signature) = try row.decode(
                (String, String, String, Bool, String, String?).self
            )
            return CountryCertificate.Kind(rawValue: type).map {
                CountryCertificate(
                    thumbprint: thumbprint,
                    kind: $0,
                    country: country,
                    revoked: revoked,
                    pem: pem,
                    signature: signature
                )
            }
        }
    }

    private func intact(_ rows: [CountryCertificate]) async -> [CountryCertificate] {
        var intact: [CountryCertificate] = []
        for row in rows {
            if await self.integrity.holds(for: row) {
                intact.append(row)
            } else {
                self.logger.warning(
                    "A certificate row fails its integrity check and is ignored",
                    metadata: ["country": "\(row.country)", "certificate.type": "\(row.kind.rawValue)"]
                )
            }
        }
        return intact
    }

    /// Registers (or re-registers, un-revoking) a certificate.
    func register(_ certificate: CountryCertificate) async throws {
        try await self.database.query(
            """
            INSERT INTO certificate (thumbprint, type, country, revoked, raw_pem, signature)
            VALUES (\(certificate.thumbprint), \(certificate.kind.rawValue), \(certificate.country), false, \(certificate.pem),
                    \(certificate.signature))
            ON CONFLICT (thumbprint, type) DO UPDATE
               SET country = EXCLUDED.country, revoked = false, raw_pem = EXCLUDED.raw_pem, signature = EXCLUDED.signature
            """,
            logger: self.logger
        )
    }

    /// Revokes every certificate of `country` of `kind` (or all kinds); returns how many.
    func revoke(country: String, kind: CountryCertificate.Kind?) async throws -> Int {
        try await self.database.query(
            """
            WITH revoked AS (
                UPDATE certificate SET revoked = true
                 WHERE country = \(country) AND (\(kind == nil) OR type = \(kind?.rawValue ?? "")) AND NOT revoked
                RETURNING 1
            )
            SELECT count(*) FROM revoked
            """,
            logger: self.logger
        ).first?.decode(Int.self) ?? 0
    }

    // MARK: - Uploads

    func isTagUsed(_ tag: String) async throws -> Bool {
        try await !self.database.query("SELECT 1 FROM upload_batch WHERE batch_tag = \(tag)", logger: self.logger)
            .isEmpty
    }

    /// Stores an upload batch and its keys in one transaction. A used tag or a key that exists already stores nothing.
    func storeUpload(
        tag: String,
        country: String,
        uploaderThumbprint: String,
        signingThumbprint: String,
        signature: String,
        keys: [FederationDiagnosisKey]
    ) async throws -> StoredUpload {
        let hashes = keys.map { SecretHash.sha256Hex(bytes: BatchSignatureBytes.record(of: $0)) }
        return try await rethrowingTransactionCause {
            try await self.database.withTransaction(logger: self.logger) { connection in
                let added = try await connection.query(
                    """
                    INSERT INTO upload_batch (batch_tag, country, uploader_thumbprint, signing_thumbprint, batch_signature, amount)
                    VALUES (\(tag), \(country), \(uploaderThumbprint), \(signingThumbprint), \(signature), \(keys.count))
                    ON CONFLICT DO NOTHING RETURNING 1
                    """,
                    logger: self.logger
                ).collect()
                guard !added.isEmpty else { return .duplicateTag }
                let existing = try await connection.query(
                    "SELECT payload_hash FROM diagnosis_key WHERE payload_hash = ANY(\(hashes)::text[])",
                    logger: self.logger
                ).collect()
                let duplicates = Set(try existing.map { try $0.decode(String.self) })
                // A key twice in the same upload counts as a duplicate too (its second occurrence).
                var seen = Set<String>()
                var conflicts: [Int] = []
                for (index, hash) in hashes.enumerated() where duplicates.contains(hash) || !seen.insert(hash).inserted
                {
                    conflicts.append(index)
                }
                guard conflicts.isEmpty else { throw DuplicateKeys(indices: conflicts) }
                try await connection.query(
                    """
                    INSERT INTO diagnosis_key (upload_batch_tag, payload_hash, key_data, rolling_start_interval_number, rolling_period,
                                               transmission_risk_level, visited_countries, origin, report_type, days_since_onset_of_symptoms)
                    SELECT \(tag), k.hash, k.data, k.start, k.period, k.trl, string_to_array(k.visited, ','), k.origin, k.report, k.dsos
                      FROM unnest(\(hashes)::text[], \(keys.map { ByteBuffer(bytes: $0.keyData) })::bytea[],
                                  \(keys.map { Int64($0.rollingStartIntervalNumber) })::bigint[], \(keys.map { Int64($0.rollingPeriod) })::bigint[],
                                  \(keys.map(\.transmissionRiskLevel))::integer[], \(keys.map { $0.visitedCountries.joined(separator: ",") })::text[],
                                  \(keys.map(\.origin))::text[], \(keys.map { Int32($0.reportType.rawValue) })::integer[],
                                  \(keys.map(\.daysSinceOnsetOfSymptoms))::integer[])
                           AS k(hash, data, start, period, trl, visited, origin, report, dsos)
                     ORDER BY k.hash
                    """,
                    logger: self.logger
                )
                return .stored
            }
        } catchDuplicates: { indices in
            .duplicateKeys(indices)
        }
    }

    private struct DuplicateKeys: Error { var indices: [Int] }

    private func rethrowingTransactionCause(
        _ body: () async throws -> StoredUpload,
        catchDuplicates: ([Int]) -> StoredUpload
    ) async throws -> StoredUpload {
        do {
            return try await ENPersistence.rethrowingTransactionCause(body)
        } catch let duplicates as DuplicateKeys {
            return catchDuplicates(duplicates.indices)
        }
    }

    // MARK: - Download batches

    /// Groups the upload batches not yet in a download batch into download batches of at most `maximumKeys` keys,
    /// whole upload batches only, in upload order; each new batch is linked from the day's previous one. Returns the
    /// new batches; `nil` when another replica is batching.
    func formDownloadBatches(maximumKeys: Int, now: Date) async throws -> [DownloadBatchRecord]? {
        let day = FederationProtocol.dayString(now)
        let compactDay = day.replacingOccurrences(of: "-", with: "")
        return try await ENPersistence.rethrowingTransactionCause {
            try await Self.batchingLock.withTryLock(client: self.database.client, logger: self.logger) { connection in
                let pending = try await connection.query(
                    "SELECT batch_tag, amount FROM upload_batch WHERE download_batch_tag IS NULL ORDER BY position",
                    logger: self.logger
                ).collect().map { try $0.decode((String, Int).self) }
                guard !pending.isEmpty else { return [] }
                var groups: [[String]] = [[]]
                var size = 0
                for (tag, amount) in pending {
                    if size + amount > maximumKeys, !groups[groups.count - 1].isEmpty {
                        groups.append([])
                        size = 0
                    }
                    groups[groups.count - 1].append(tag)
                    size += amount
                }
                var number =
                    try await connection.query(
                        "SELECT coalesce(max(number), 0) FROM download_batch WHERE day = \(day)::date",
                        logger: self.logger
                    ).collect().first?.decode(Int.self) ?? 0
                var created: [DownloadBatchRecord] = []
                for group in groups {
                    number += 1
                    let tag = "\(compactDay)-\(number)"
                    try await connection.query(
                        "UPDATE download_batch SET next_tag = \(tag) WHERE day = \(day)::date AND number = \(number - 1)",
                        logger: self.logger
                    )
                    try await connection.query(
                        "INSERT INTO download_batch (batch_tag, day, number) VALUES (\(tag), \(day)::date, \(number))",
                        logger: self.logger
                    )
                    try await connection.query(
                        "UPDATE upload_batch SET download_batch_tag = \(tag) WHERE batch_tag = ANY(\(group)::text[])",
                        logger: self.logger
                    )
                    try await connection.query(
                        """
                        INSERT INTO callback_task (country, callback_id, batch_tag, day)
                        SELECT country, callback_id, \(tag), \(day)::date FROM callback
                        """,
                        logger: self.logger
                    )
                    created.append(DownloadBatchRecord(tag: tag, day: day, nextTag: nil))
                }
                return created
            }
        }
    }

    /// Download batch `tag`, or the first of `day` without a tag.
    func downloadBatch(day: String, tag: String?) async throws -> DownloadBatchRecord? {
        let rows: [PostgresRow]
        if let tag {
            rows = try await self.database.query(
                "SELECT batch_tag, to_char(day, 'YYYY-MM-DD'), next_tag FROM download_batch WHERE batch_tag = \(tag)",
                logger: self.logger
            )
        } else {
            rows = try await self.database.query(
                """
                SELECT batch_tag, to_char(day, 'YYYY-MM-DD'), next_tag FROM download_batch
                 WHERE day = \(day)::date ORDER BY number LIMIT 1
                """,
                logger: self.logger
            )
        }
        return try rows.first.map { row in
            let (tag, day, next) = try row.decode((String, String, String?).self)
            return DownloadBatchRecord(tag: tag, day: day, nextTag: next)
        }
    }

    /// The keys of download batch `tag` not uploaded by `country`, in upload order.
    func keys(of tag: String, excluding country: String) async throws -> [FederationDiagnosisKey] {
        let rows = try await self.database.query(
            """
            SELECT k.key_data, k.rolling_start_interval_number, k.rolling_period, k.transmission_risk_level, k.visited_countries,
                   k.origin, k.report_type, k.days_since_onset_of_symptoms
              FROM diagnosis_key k JOIN upload_batch u ON u.batch_tag = k.upload_batch_tag
             WHERE u.download_batch_tag = \(tag) AND u.country <> \(country)
             ORDER BY u.position, k.id
            """,
            logger: self.logger
        )
        return try rows.map { row in
            let (data, start, period, trl, visited, origin, report, dsos) = try row.decode(
                (ByteBuffer, Int64, Int64, Int32, [String], String, Int32, Int32).self
            )
            var key = FederationDiagnosisKey()
            key.keyData = Data(data.readableBytesView)
            key.rollingStartIntervalNumber = UInt32(truncatingIfNeeded: start)
            key.rollingPeriod = UInt32(truncatingIfNeeded: period)
            key.transmissionRiskLevel = trl
            key.visitedCountries = visited
            key.origin = origin
            key.reportType = ReportType(rawValue: Int(report)) ?? .unknown
            key.daysSinceOnsetOfSymptoms = dsos
            return key
        }
    }

    /// The upload batches of download batch `tag`, in the order of its keys, with the amount of keys each still has.
    func uploadBatches(of tag: String) async throws -> [UploadBatchRecord] {
        let rows = try await self.database.query(
            """
            SELECT u.batch_tag, u.country, u.uploader_thumbprint, u.signing_thumbprint, u.batch_signature,
                   (SELECT count(*) FROM diagnosis_key k WHERE k.upload_batch_tag = u.batch_tag), u.uploaded_at
              FROM upload_batch u WHERE u.download_batch_tag = \(tag) ORDER BY u.position
            """,
            logger: self.logger
        )
        return try rows.map { row in
            let (batch, country, uploader, signing, signature, amount, uploaded) = try row.decode(
                (String, String, String, String, String, Int, Date).self
            )
            return UploadBatchRecord(
                tag: batch,
                country: country,
                uploaderThumbprint: uploader,
                signingThumbprint: signing,
                signature: signature,
                amount: amount,
                uploadedAt: uploaded
            )
        }
    }

    // MARK: - Callbacks

    func callbacks(country: String) async throws -> [CallbackRegistration] {
        try await self.database.query(
            "SELECT callback_id, url FROM callback WHERE country = \(country) ORDER BY callback_id",
            logger: self.logger
        ).map { row in
            let (id, url) = try row.decode((String, String).self)
            return CallbackRegistration(callbackId: id, url: url)
        }
    }

    func putCallback(country: String, id: String, url: String) async throws {
        try await self.database.query(
            """
            INSERT INTO callback (country, callback_id, url) VALUES (\(country), \(id), \(url))
            ON CONFLICT (country, callback_id) DO UPDATE SET url = EXCLUDED.url
            """,
            logger: self.logger
        )
    }

    /// Deletes a callback; `false` when there was none.
    func deleteCallback(country: String, id: String) async throws -> Bool {
        let rows = try await self.database.query(
            "DELETE FROM callback WHERE country = \(country) AND callback_id = \(id) RETURNING 1",
            logger: self.logger
        )
        return !rows.isEmpty
    }

    struct CallbackTask: Sendable {
        var id: Int64
        var country: String
        var callbackID: String
        var url: String
        var tag: String
        var day: String
        var attempts: Int
    }

    /// Due tasks, oldest first: per subscription only the oldest, so batches are announced in order.
    func dueCallbackTasks(now: Date) async throws -> [CallbackTask] {
        try await self.database.query(
            """
            SELECT DISTINCT ON (t.country, t.callback_id) t.id, t.country, t.callback_id, c.url, t.batch_tag,
                   to_char(t.day, 'YYYY-MM-DD'), t.attempts, t.not_before
              FROM callback_task t JOIN callback c USING (country, callback_id)
             ORDER BY t.country, t.callback_id, t.id
            """,
            logger: self.logger
        ).compactMap { row in
            let (id, country, callbackID, url, tag, day, attempts, notBefore) = try row.decode(
                (Int64, String, String, String, String, String, Int, Date).self
            )
            guard notBefore <= now else { return nil }
            return CallbackTask(
                id: id,
                country: country,
                callbackID: callbackID,
                url: url,
                tag: tag,
                day: day,
                attempts: attempts
            )
        }
    }

    func completeCallbackTask(_ id: Int64) async throws {
        try await self.database.query("DELETE FROM callback_task WHERE id = \(id)", logger: self.logger)
    }

    /// Records a failed delivery: retried after `wait`; after `maximumAttempts` the subscription is deleted.
    func failCallbackTask(_ task: CallbackTask, wait: Duration, maximumAttempts: Int, now: Date) async throws {
        if task.attempts + 1 >= maximumAttempts {
            _ = try await self.deleteCallback(country: task.country, id: task.callbackID)
            return
        }
        let notBefore = now.addingTimeInterval(Double(wait.components.seconds))
        try await self.database.query(
            "UPDATE callback_task SET attempts = attempts + 1, not_before = \(notBefore) WHERE id = \(task.id)",
            logger: self.logger
        )
    }

    // MARK: - Retention

    /// Deletes keys created before `cutoff`, then upload batches without keys and download batches without upload
    /// batches. Returns how many keys were deleted.
    func deleteKeys(createdBefore cutoff: Date) async throws -> Int {
        try await self.database.withTransaction(logger: self.logger) { connection in
            let deleted =
                try await connection.query(
                    "WITH gone AS (DELETE FROM diagnosis_key WHERE created_at < \(cutoff) RETURNING 1) SELECT count(*) FROM gone",
                    logger: self.logger
                ).collect().first?.decode(Int.self) ?? 0
            try await connection.query(
                """
                DELETE FROM upload_batch u WHERE u.uploaded_at < \(cutoff)
                   AND NOT EXISTS (SELECT 1 FROM diagnosis_key k WHERE k.upload_batch_tag = u.batch_tag)
                """,
                logger: self.logger
            )
            try await connection.query(
                """
                DELETE FROM download_batch d WHERE d.created_at < \(cutoff)
                   AND NOT EXISTS (SELECT 1 FROM upload_batch u WHERE u.download_batch_tag = d.batch_tag)
                """,
                logger: self.logger
            )
            return deleted
        }
    }
}
