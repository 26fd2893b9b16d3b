// Whole distribution runs on a real database into a CDN folder (cwa-server §3): the tree and its signatures, published
// key files that are never rewritten, retention of rows and files, keys carried between runs by the shifting policy,
// the run lock, trace-warning packages, the app configurations, and a missing signing key stopping the start.

import ENKeyStore
import ENModels
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import MetricsTestKit
import PostgresNIO
import SwiftProtobuf
import Testing

@testable import DistributionService

@Suite("Distribution runs", .postgres(KeyStoreMigrations.group))
struct DistributionRunTests {
    /// Publishes every hour, however few keys it holds.
    private static func shiftingThresholdOfOne(_ policy: inout KeyDistributionPolicy) {
        policy.shiftingThreshold = 1
    }

    /// Holds an hour's keys back until three have accumulated.
    private static func shiftingThresholdOfThree(_ policy: inout KeyDistributionPolicy) {
        policy.shiftingThreshold = 3
    }

    typealias Fixture = DistributionFixture

    /// The hour of the fixture's start, 2026-11-22 10:00 UTC.
    static let hour = DistributionFixture.currentHour
    /// The first hour of yesterday, 2026-11-21.
    static let yesterday = (DistributionFixture.today - 1) * 24
    static let keys = DistributionFixture.keyFolder

    @Test(
        "keys of yesterday's complete hours: root, country, date and hour indexes, and a signed day archive in key order"
    )
    func publishesYesterday() async throws {
        try await Fixture.with(policy: Self.shiftingThresholdOfOne) { fixture in
            var published = try await fixture.insertKeys(5, hour: Self.yesterday + 3)
            // 0x7F… and 0x80… change places when bytes compare signed.
            let leads: [UInt8] = [0x80, 0x7F, 0xFF, 0x00]
            let edges = leads.map { Fixture.random(16, lead: $0) }
            try await fixture.insert(keys: edges, hour: Self.yesterday + 7)
            published += edges
            // Below the lowest published TRL: stored and federated, never distributed.
            try await fixture.insertKeys(2, hour: Self.yesterday + 7, trl: 2)

            let report = try await fixture.completedRun()

            #expect(report.keysRead == 9)
            #expect(fixture.text("version") == #"["v1"]"#)
            #expect(fixture.text("version/index-v2") == #"["v2"]"#)
            #expect(fixture.text(Self.keys) == #"["DE","EUR"]"#)
            #expect(fixture.text("\(Self.keys)/DE/date") == #"["2026-11-21"]"#)
            #expect(fixture.text("\(Self.keys)/EUR/date") == #"["2026-11-21"]"#)
            // Threshold 1: every walked hour from the first key's on is listed, empty ones included; today up to 09.
            #expect(fixture.text("\(Self.keys)/DE/date/2026-11-21/hour") == Fixture.hours(3...23))
            #expect(fixture.text("\(Self.keys)/DE/date/2026-11-22/hour") == Fixture.hours(0...9))

            let day = "\(Self.keys)/DE/date/2026-11-21"
            // The day archive is also the folder of its hours, so it is the file `<day>/index`.
            #expect(fixture.fileExists(day + "/index"))
            let export = try fixture.keyExport(day)
            #expect(export.region == "DE")
            #expect(export.startTimestamp == UInt64((Fixture.today - 1) * 86_400))
            #expect(export.endTimestamp == UInt64(Fixture.today * 86_400))
            #expect(export.batchNum == 1 && export.batchSize == 1)
            let exported = export.keys.map { [UInt8]($0.keyData) }
            let unsignedOrder = published.sorted { $0.lexicographicallyPrecedes($1) }
            #expect(exported == unsignedOrder)
            #expect(export.keys.allSatisfy { $0.transmissionRiskLevel == 6 && $0.rollingPeriod == 144 })

            #expect(try fixture.keyExport("\(Self.keys)/DE/date/2026-11-21/hour/3").keys.count == 5)
            #expect(try fixture.keyExport("\(Self.keys)/DE/date/2026-11-21/hour/7").keys.count == 4)
            let emptyHour = try fixture.keyExport("\(Self.keys)/DE/date/2026-11-21/hour/4")
            #expect(emptyHour.keys.isEmpty)
            #expect(emptyHour.startTimestamp == UInt64((Self.yesterday + 4) * 3600))
            let eur = try fixture.keyExport("\(Self.keys)/EUR/date/2026-11-21")
            #expect(eur.region == "EUR")
            #expect(eur.keys.map { [UInt8]($0.keyData) } == unsignedOrder)

            let (bin, sig) = try fixture.archive(day)
            let info = try #require(try TEKSignatureList(serializedBytes: sig).signatures.first).signatureInfo
            #expect(info.verificationKeyID == "262" && info.verificationKeyVersion == "v1")
            #expect(info.signatureAlgorithm == "1.2.840.10045.4.3.2" && info.appBundleID == "de.rki.coronawarnapp")
            #expect(export.signatureInfos == [info])
            #expect(try fixture.isSigned(bin, sig))
            var tampered = bin
            tampered[tampered.count - 1] ^= 0x01
            #expect(try fixture.isSigned(tampered, sig) == false)
        }
    }

    @Test(
        "a published key file is never rewritten: keys added to its hour later stay out of it, changed indexes are replaced"
    )
    func publishedKeyFilesStay() async throws {
        try await Fixture.with(policy: Self.shiftingThresholdOfOne) { fixture in
            let hourFile = "\(Self.keys)/DE/date/2026-11-21/hour/3"
            let dayFile = "\(Self.keys)/DE/date/2026-11-21"
            let todayHours = "\(Self.keys)/DE/date/2026-11-22/hour"
            try await fixture.insertKeys(5, hour: Self.yesterday + 3)
            try await fixture.completedRun()
            let hourBytes = try #require(fixture.bytes(hourFile))
            let dayBytes = try #require(fixture.bytes(dayFile))
            let written = try fixture.modificationDate(hourFile)
            let hoursBefore = fixture.text(todayHours)

            // Not possible with real clocks (the hour was over), so the only way to see that nothing is repacked.
            try await fixture.insertKeys(4, hour: Self.yesterday + 3)
            fixture.clock.advance(by: 3600)
            let report = try await fixture.completedRun()

            #expect(report.keysRead == 9)
            #expect(fixture.bytes(hourFile) == hourBytes)
            #expect(try fixture.modificationDate(hourFile) == written)
            #expect(fixture.bytes(dayFile) == dayBytes)
            #expect(try fixture.keyExport(hourFile).keys.count == 5)
            #expect(hoursBefore == Fixture.hours(0...9))
            #expect(fixture.text(todayHours) == Fixture.hours(0...10))
            #expect(try fixture.keyExport("\(todayHours)/10").keys.isEmpty)
        }
    }

    @Test(
        "retention deletes rows older than 14 days with their federation copies, and stale day, hour and trace-warning files"
    )
    func retention() async throws {
        try await Fixture.with(policy: Self.shiftingThresholdOfOne) { fixture in
            let cutoff = Self.hour - 14 * 24
            try await fixture.insertKeys(2, hour: cutoff - 1, consent: true)
            try await fixture.insertKeys(1, hour: cutoff - 30)
            try await fixture.insertKeys(1, hour: cutoff, consent: true)
            try await fixture.insertKeys(1, hour: Self.hour - 30, consent: true)
            try await fixture.insertCheckInReport(hour: cutoff - 1)
            try await fixture.insertCheckInReport(hour: Self.hour - 5)
            try await fixture.insertTraceWarning(hour: cutoff - 1, start: UInt32((cutoff - 2) * 6))
            try await fixture.insertTraceWarning(hour: Self.hour - 5, start: UInt32((Self.hour - 6) * 6))
            // The trigger mirrors consenting PCR keys for federation.
            #expect(try await fixture.database.count("federation_upload_key") == 4)
            let de = "\(Self.keys)/DE/date"
            let gone = [
                // 15 days ago
                "\(de)/2026-11-07/index", "\(de)/2026-11-07/hour/3", "\(Self.keys)/EUR/date/2026-11-07/index",
                "\(de)/2026-11-19/hour/index", "\(de)/2026-11-19/hour/5",  // hour folder of 3 days ago
                "version/v2/twp/country/DE/hour/\(cutoff - 1)", "version/v1/twp/country/DE/hour/\(cutoff - 1)",
            ]
            let kept = [
                "\(de)/2026-11-17/index", "\(de)/2026-11-19/index", "version/v2/twp/country/DE/hour/\(cutoff + 1)",
            ]
            for path in gone + kept {
                try fixture.writeFile(path)
            }

            let report = try await fixture.completedRun()

            #expect(report.retention == KeyRetentionOutcome(keys: 3, checkInReports: 1, traceWarnings: 1))
            #expect(try await fixture.database.count("diagnosis_key", where: "submission_timestamp < \(cutoff)") == 0)
            #expect(try await fixture.database.count("diagnosis_key") == 2)
            #expect(try await fixture.database.count("federation_upload_key") == 2)
            #expect(try await fixture.database.count("check_in_protected_reports") == 1)
            #expect(try await fixture.database.count("trace_time_interval_warning") == 1)
            #expect(report.objectsDeleted == gone.count)
            for path in gone {
                #expect(!fixture.fileExists(path), "\(path)")
            }
            for path in kept {
                #expect(fixture.fileText(path) == "stale", "\(path)")
            }
            // The emptied day folder goes too.
            #expect(!fixture.fileExists("\(de)/2026-11-07"))
        }
    }

    /// A store whose every write fails, as a bucket that refuses uploads.
    struct RefusingStore: ObjectStore {
        let base: DirectoryStore
        var description: String { "refusing \(self.base.description)" }
        func list(prefix: String) async throws -> Set<String> { try await self.base.list(prefix: prefix) }
        func checksum(of key: String) async throws -> String? { try await self.base.checksum(of: key) }
        func get(_ key: String) async throws -> [UInt8]? { try await self.base.get(key) }
        func put(_ object: CDNObject) async throws { throw CocoaError(.fileWriteNoPermission) }
        func delete(_ key: String) async throws { try await self.base.delete(key) }
    }

    @Test(
        "publication latency: each key once, when first published, from its submission hour; the oldest publishable key that waits"
    )
    func publicationLatency() async throws {
        try await Fixture.with(policy: Self.shiftingThresholdOfThree) { fixture in
            // 08:00: three keys, published in their hour. 09:00: one key, short of the threshold, waits.
            try await fixture.insertKeys(3, hour: Self.hour - 2)
            try await fixture.insertKeys(1, hour: Self.hour - 1)
            // 05:00: a key that expired as it was submitted: the expiry policy holds it back until 08:00.
            try await fixture.insert(
                keys: [Fixture.random(16)],
                hour: Self.hour - 5,
                rollingStart: Int32((Self.hour - 5) * 6 - 144)
            )

            // 10:25.
            let first = try await fixture.completedRun()
            #expect(first.latency.immediate == [8_700, 8_700, 8_700])  // 10:25 - 08:00
            #expect(first.latency.embargoed == [19_500])  // 10:25 - 05:00
            #expect(first.latency.oldestWaiting == 1_500)  // the 09:00 key, publishable since 10:00
            let none = try fixture.metrics.expectRecorder(
                DistributionMetrics.publicationLatency,
                [("embargo", "none")]
            )
            #expect(none.values == [8_700, 8_700, 8_700])
            let waiting = try fixture.metrics.expectGauge("en_distribution_oldest_unpublished_key_age_seconds")
            #expect(waiting.lastValue == 1_500)

            // Nothing new: nothing measured.
            let again = try await fixture.completedRun()
            #expect(again.latency.immediate.isEmpty && again.latency.embargoed.isEmpty)

            // 11:25: two keys of 10:00 bring the waiting one to the threshold; all three are published at 10:00.
            try await fixture.insertKeys(2, hour: Self.hour)
            fixture.clock.advance(by: 3600)
            let third = try await fixture.completedRun()
            #expect(third.latency.immediate.sorted() == [5_100, 5_100, 8_700])  // 11:25 - 10:00, 11:25 - 09:00
            #expect(third.latency.oldestWaiting == 0)
            #expect(waiting.lastValue == 0)
        }
    }

    @Test("expired objects go after publishing: a run that cannot publish leaves them, and the indexes naming them")
    func retentionAfterPublishing() async throws {
        try await Fixture.with(policy: Self.shiftingThresholdOfOne) { fixture in
            let dates = "\(Self.keys)/DE/date"
            let expired = "\(dates)/2026-11-07/index"
            try fixture.writeFile(expired)
            try fixture.writeFile("\(dates)/index", #"["2026-11-07"]"#)
            try await fixture.insertKeys(1, hour: Self.yesterday + 3)

            await #expect(throws: PublishError.self) {
                try await fixture.run(store: RefusingStore(base: fixture.store))
            }
            #expect(fixture.fileText(expired) == "stale")
            #expect(fixture.fileText("\(dates)/index") == #"["2026-11-07"]"#)

            let report = try await fixture.completedRun()
            #expect(report.objectsDeleted == 1)
            #expect(!fixture.fileExists(expired))
            #expect(fixture.fileText("\(dates)/index") == #"["2026-11-21"]"#)
        }
    }

    @Test("a run removes the half-written files of a run that died, and nothing the tree needs")
    func abandonedFiles() async throws {
        try await Fixture.with(policy: Self.shiftingThresholdOfOne) { fixture in
            try await fixture.insertKeys(1, hour: Self.yesterday + 3)
            try await fixture.completedRun()
            let dates = "\(Self.keys)/DE/date"
            let partial = ["\(dates)/.tmp-1", "\(dates)/2026-11-21/hour/.tmp-2", "version/.tmp-3"]
            for path in partial { try fixture.writeFile(path, "partial") }
            let before = try await fixture.store.list(prefix: "")

            let report = try await fixture.completedRun()
            for path in partial { #expect(!fixture.fileExists(path), "\(path)") }
            #expect(try await fixture.store.list(prefix: "") == before)
            #expect(report.publish.uploaded == 0)
        }
    }

    @Test(
        "keys below the shifting threshold wait: walked hours get empty files, the hour that reaches 140 publishes them all"
    )
    func carryOver() async throws {
        try await Fixture.with { fixture in
            #expect(fixture.configuration.policy.shiftingThreshold == 140)
            let hours = "\(Self.keys)/DE/date/2026-11-22/hour"
            let early = try await fixture.insertKeys(100, hour: Self.hour - 2)
            let first = try await fixture.completedRun()
            let emptyHour = try #require(fixture.bytes("\(hours)/8"))

            #expect(first.keysRead == 100)
            #expect(fixture.text(hours) == "[8,9]")
            #expect(try fixture.keyExport("\(hours)/8").keys.isEmpty)
            #expect(try fixture.keyExport("\(hours)/9").keys.isEmpty)
            #expect(try fixture.keyExport("\(Self.keys)/EUR/date/2026-11-22/hour/9").keys.isEmpty)

            // Submitted during the first run's hour, so the next run is the first that may publish them.
            let late = try await fixture.insertKeys(50, hour: Self.hour)
            fixture.clock.advance(by: 3600)
            let second = try await fixture.completedRun()

            #expect(second.keysRead == 150)
            #expect(fixture.text(hours) == "[8,9,10]")
            let reached = try fixture.keyExport("\(hours)/10")
            #expect(reached.keys.count == 150)
            #expect(Set(reached.keys.map { [UInt8]($0.keyData) }) == Set(early + late))
            #expect(try fixture.keyExport("\(Self.keys)/EUR/date/2026-11-22/hour/10").keys.count == 150)
            #expect(fixture.bytes("\(hours)/8") == emptyHour)
            #expect(try fixture.keyExport("\(hours)/9").keys.isEmpty)
        }
    }

    @Test(
        "a run that finds the run lock taken returns nil and publishes nothing; once the lock is free, a run completes"
    )
    func runLock() async throws {
        try await Fixture.with(policy: Self.shiftingThresholdOfOne) { fixture in
            let database = fixture.database
            try await fixture.insertKeys(3, hour: Self.hour - 2)

            let whileHeld = try await database.client.withTransaction(logger: database.logger) { connection in
                try await PostgresDiagnosisKeyRepository.publicationLock.lock(
                    connection: connection,
                    logger: database.logger
                )
                return try await fixture.run()
            }
            let publishedWhileHeld = try await fixture.store.list(prefix: "")
            let afterwards = try await fixture.run()

            #expect(whileHeld == nil)
            #expect(publishedWhileHeld.isEmpty)
            #expect(afterwards?.keysRead == 3)
            #expect(fixture.exists("\(Self.keys)/DE/date/2026-11-22/hour/8"))
            #expect(
                try fixture.metrics.expectCounter("en_distribution_runs_total", [("outcome", "skipped")]).totalValue
                    == 1
            )
            #expect(
                try fixture.metrics.expectCounter("en_distribution_runs_total", [("outcome", "completed")]).totalValue
                    == 1
            )
        }
    }

    @Test(
        "trace-warning packages: each hour from the oldest to the latest complete one, empty hours as 0-byte files, rows in id order"
    )
    func traceWarningPackages() async throws {
        try await Fixture.with { fixture in
            let oldest = Self.hour - 5
            let latest = Self.hour - 3
            // Inserted in descending byte order, so an order by content would differ from the id order.
            let reports = try await [
                fixture.insertCheckInReport(hour: oldest, lead: 0xF0),
                fixture.insertCheckInReport(hour: oldest, lead: 0x10),
                fixture.insertCheckInReport(hour: latest),
            ]
            let warnings = try await [
                fixture.insertTraceWarning(hour: oldest, start: UInt32((oldest - 2) * 6), lead: 0xF0),
                fixture.insertTraceWarning(
                    hour: oldest,
                    start: UInt32((oldest - 1) * 6),
                    period: 3,
                    trl: 8,
                    lead: 0x10
                ),
                fixture.insertTraceWarning(hour: latest, start: UInt32((latest - 1) * 6)),
            ]
            // The current hour is not complete: its rows wait for the next run.
            try await fixture.insertCheckInReport(hour: Self.hour)
            try await fixture.insertTraceWarning(hour: Self.hour, start: UInt32(Self.hour * 6))

            let report = try await fixture.completedRun()

            #expect(report.checkInReportsRead == 3)
            #expect(report.traceWarningsRead == 3)
            for version in [1, 2] {
                let hours = "version/v\(version)/twp/country/DE/hour"
                #expect(fixture.text("version/v\(version)/twp/country") == #"["DE"]"#)
                #expect(fixture.text(hours) == "{\"oldest\":\(oldest),\"latest\":\(latest)}")
                #expect(fixture.bytes("\(hours)/\(Self.hour - 4)")?.isEmpty == true, "v\(version) hour without data")
                #expect(!fixture.exists("\(hours)/\(Self.hour - 2)"))
                #expect(!fixture.exists("\(hours)/\(Self.hour)"))
            }

            let (bin, sig) = try fixture.archive("version/v2/twp/country/DE/hour/\(oldest)")
            #expect(try fixture.isSigned(bin, sig))
            let encrypted = try TraceWarningPackage(serializedBytes: bin)
            #expect(encrypted.intervalNumber == UInt32(oldest))
            #expect(encrypted.region == "DE")
            #expect(encrypted.timeIntervalWarnings.isEmpty)
            #expect(encrypted.checkInProtectedReports == reports.prefix(2).map(Self.reportMessage))
            let encryptedLatest = try TraceWarningPackage(
                serializedBytes: fixture.archive("version/v2/twp/country/DE/hour/\(latest)").bin
            )
            #expect(encryptedLatest.intervalNumber == UInt32(latest))
            #expect(encryptedLatest.checkInProtectedReports == [Self.reportMessage(reports[2])])

            let plain = try TraceWarningPackage(
                serializedBytes: fixture.archive("version/v1/twp/country/DE/hour/\(oldest)").bin
            )
            #expect(plain.intervalNumber == UInt32(oldest))
            #expect(plain.region == "DE")
            #expect(plain.checkInProtectedReports.isEmpty)
            #expect(plain.timeIntervalWarnings == warnings.prefix(2).map(Self.warningMessage))
            let plainLatest = try TraceWarningPackage(
                serializedBytes: fixture.archive("version/v1/twp/country/DE/hour/\(latest)").bin
            )
            #expect(plainLatest.timeIntervalWarnings == [Self.warningMessage(warnings[2])])
        }
    }

    @Test(
        "the app configurations are signed archives of the configured messages; a second run in the same hour uploads nothing"
    )
    func appConfigurations() async throws {
        try await Fixture.with { fixture in
            let first = try await fixture.completedRun()
            let second = try await fixture.completedRun()

            let (iosBin, iosSig) = try fixture.archive("version/v2/app_config_ios")
            let ios = try ApplicationConfigurationIOS(serializedBytes: iosBin)
            #expect(ios == fixture.configuration.appConfiguration.ios)
            #expect(ios != ApplicationConfigurationIOS())
            #expect(try fixture.isSigned(iosBin, iosSig))
            let (androidBin, androidSig) = try fixture.archive("version/v2/app_config_android")
            let android = try ApplicationConfigurationAndroid(serializedBytes: androidBin)
            #expect(android == fixture.configuration.appConfiguration.android)
            #expect(android != ApplicationConfigurationAndroid())
            #expect(try fixture.isSigned(androidBin, androidSig))
            #expect(
                try ApplicationConfigurationIOS(serializedBytes: fixture.archive("version/v1/app_config_ios").bin)
                    == ios
            )
            #expect(
                try ApplicationConfigurationAndroid(
                    serializedBytes: fixture.archive("version/v1/app_config_android").bin
                ) == android
            )

            // Without any rows the indexes are still there, empty.
            #expect(fixture.text(Self.keys) == #"["DE","EUR"]"#)
            #expect(fixture.text("\(Self.keys)/DE/date") == "[]")
            #expect(fixture.text("version/v2/twp/country/DE/hour") == #"{"oldest":null,"latest":null}"#)
            // The archives are signed again (new signature bytes), but their content is unchanged, so nothing is uploaded.
            #expect(first.archivesBuilt == 4 && second.archivesBuilt == 4)
            #expect(first.publish.uploaded > 0)
            #expect(second.publish.uploaded == 0)
            #expect(second.publish.unchanged == first.publish.uploaded)
        }
    }

    // MARK: - Expected messages

    /// The package entry of a stored report.
    static func reportMessage(_ report: StoredCheckInReport) -> CheckInProtectedReport {
        var message = CheckInProtectedReport()
        message.locationIDHash = Data(report.locationIDHash)
        message.iv = Data(report.initializationVector)
        message.encryptedCheckInRecord = Data(report.encryptedCheckInRecord)
        message.mac = Data(report.mac)
        return message
    }

    /// The package entry of a stored warning.
    static func warningMessage(_ warning: StoredTraceWarning) -> TraceTimeIntervalWarning {
        var message = TraceTimeIntervalWarning()
        message.locationIDHash = Data(warning.locationIDHash)
        message.startIntervalNumber = warning.startIntervalNumber
        message.period = warning.period
        message.transmissionRiskLevel = warning.transmissionRiskLevel
        return message
    }
}

@Suite("Distribution start-up")
struct DistributionStartupTests {
    @Test(
        "a signing key file that cannot be read is a problem naming SIGNING_KEY_FILES, and the binary exits 2 before any run"
    )
    func missingSigningKey() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("distribution-\(UUID().uuidString)")
        let values = [
            "DATABASE_URL": "postgres://test:secret@127.0.0.1:1/test?sslmode=disable",
            "SIGNING_KEY_FILES": folder.appendingPathComponent("absent.pem").path,
            "CDN_DIRECTORY": folder.appendingPathComponent("cdn").path,
        ]
        let settings = SettingsReader(values: values)
        _ = DistributionConfiguration(settings: settings)

        // Required before the binary is started below: with a valid configuration it would bootstrap logging globally.
        let problem = try #require(settings.problems.first)
        #expect(settings.problems.count == 1, "\(settings.problems)")
        #expect(problem.hasPrefix("SIGNING_KEY_FILES") && problem.contains("absent.pem"))
        #expect(throws: ConfigurationError.self) { try settings.finish() }
        #expect(await Distribution.run(arguments: ["distribution-service", "run"], environment: values) == 2)
        #expect(!FileManager.default.fileExists(atPath: folder.path))

        let unset = SettingsReader(values: ["DATABASE_URL": values["DATABASE_URL"] ?? ""])
        _ = DistributionConfiguration(settings: unset)
        #expect(unset.problems == ["SIGNING_KEY_FILES (--signing-key-files) is required"])
    }
}

extension DistributionRunTests {
    // MARK: - No period left out, and the audit

    /// Publishes every hour; at most 30 keys an archive.
    private static func thresholdOfOneCapOfThirty(_ policy: inout KeyDistributionPolicy) {
        policy.shiftingThreshold = 1
        policy.maxKeysPerBundle = 30
    }

    @Test(
        "a day and an hour over MAX_KEYS_PER_BUNDLE are published whole, each archive within the cap; the audit finds none missing"
    )
    func oversizedPeriodsPublished() async throws {
        try await Fixture.with(policy: Self.thresholdOfOneCapOfThirty) { fixture in
            // Two days ago: 50 keys in one hour (30 in it, 20 in the next; 30 in the day, 20 carried into yesterday's
            // archive). Yesterday: 12 keys, in its hour and with 10 in its day archive (2 wait in today's).
            let keys =
                try await fixture.insertKeys(50, hour: Self.yesterday - 24 + 5)
                + fixture.insertKeys(12, hour: Self.yesterday + 3)
            let report = try await fixture.completedRun()

            #expect(report.audit?.missingCount == 0)
            #expect(report.audit?.badArchiveCount == 0)
            #expect(report.sizes["DE"]?.heldBack == 0)
            #expect((report.sizes["DE"]?.deferred ?? 0) > 0)
            #expect(fixture.text("\(Self.keys)/DE/date") == #"["2026-11-20","2026-11-21"]"#)
            var published: [[UInt8]] = []
            for day in ["2026-11-20", "2026-11-21"] {
                let export = try fixture.keyExport("\(Self.keys)/DE/date/\(day)")
                #expect(export.keys.count <= 30, "\(day)")
                published += export.keys.map { Array($0.keyData) }
            }
            // Today's hours, listed, each within the cap.
            for hour in 0...9 {
                let export = try fixture.keyExport("\(Self.keys)/DE/date/2026-11-22/hour/\(hour)")
                #expect(export.keys.count <= 30)
                published += export.keys.map { Array($0.keyData) }
            }
            for hour in 0...23 {
                let export = try fixture.keyExport("\(Self.keys)/DE/date/2026-11-21/hour/\(hour)")
                #expect(export.keys.count <= 30)
                published += export.keys.map { Array($0.keyData) }
            }
            #expect(Set(keys).isSubset(of: Set(published)), "every key in a listed archive")
            #expect(
                try fixture.metrics.expectGauge("en_distribution_audit_missing_keys", [("folder", "DE")]).lastValue == 0
            )
        }
    }

    /// A store that publishes, and fails every read of an archive back, as a bucket whose read permission is missing.
    struct UnreadableStore: ObjectStore {
        let base: DirectoryStore
        var description: String { "unreadable \(self.base.description)" }
        func list(prefix: String) async throws -> Set<String> { try await self.base.list(prefix: prefix) }
        func checksum(of key: String) async throws -> String? { try await self.base.checksum(of: key) }
        func get(_ key: String) async throws -> [UInt8]? { throw CocoaError(.fileReadNoPermission) }
        func put(_ object: CDNObject) async throws { try await self.base.put(object) }
        func delete(_ key: String) async throws { try await self.base.delete(key) }
    }

    @Test("an audit that cannot read the tree fails nothing: the run and its retention stand, the failure is counted")
    func auditFailureKeepsTheRun() async throws {
        try await Fixture.with(policy: Self.shiftingThresholdOfOne) { fixture in
            try await fixture.insertKeys(1, hour: Self.hour - 14 * 24 - 1)
            try await fixture.insertKeys(3, hour: Self.hour - 2)

            let report = try #require(try await fixture.run(store: UnreadableStore(base: fixture.store)))

            #expect(report.auditFailed)
            #expect(report.audit == nil)
            #expect(report.retention.keys == 1, "retention committed with the run")
            #expect(try await fixture.database.count("diagnosis_key") == 3)
            #expect(fixture.fileExists("\(Self.keys)/DE/date/2026-11-22/hour/8"), "published")
            #expect(try fixture.metrics.expectCounter("en_distribution_audit_failures_total").totalValue == 1)
        }
    }

    @Test("the audit names the keys of a listed archive that is gone or signed by another key, by period and origin")
    func auditFindsMissingKeys() async throws {
        try await Fixture.with(policy: Self.shiftingThresholdOfOne) { fixture in
            try await fixture.insertKeys(5, hour: Self.yesterday + 3)
            try await fixture.insertKeys(2, hour: Self.hour - 2)
            let report = try await fixture.completedRun()
            #expect(report.audit?.missingCount == 0)

            // The day archive of yesterday is removed; today's hour 8 is replaced by one of another signer.
            try FileManager.default.removeItem(
                atPath: try #require(fixture.path(of: "\(Self.keys)/DE/date/2026-11-21"))
            )
            let hour8 = "\(Self.keys)/DE/date/2026-11-22/hour/8"
            let (bin, _) = try fixture.archive(hour8)
            let stranger = ArchiveTests.signer()
            try Data(try stranger.archive(content: bin)).write(
                to: URL(fileURLWithPath: try #require(fixture.path(of: hour8)))
            )

            let audit = try await TreeAudit(
                store: fixture.store,
                policy: fixture.configuration.policy,
                publicKeys: [fixture.publicKey]
            ).audit(
                try #require(
                    try await PostgresDiagnosisKeyRepository(
                        client: fixture.database.client,
                        logger: fixture.database.logger
                    )
                    .withPublicationRun { run in
                        KeyBundler(policy: fixture.configuration.policy).bundle(
                            try await run.keys(minimumTRL: 3, fromHour: Self.hour - 240),
                            currentHour: Self.hour
                        )
                    }
                ),
                hour: Self.hour
            )
            let de = try #require(audit.folders.first { $0.folder == "DE" })
            // Yesterday's hours are still listed, so its keys are not missing; today's hour 8 is unusable.
            #expect(de.missing == [Self.hour - 2: ["DE": 2]])
            #expect(de.badArchives.count == 2)
            #expect(
                de.badArchives.contains { $0.hasPrefix("\(Self.keys)/DE/date/2026-11-21 (listed, not in the store)") }
            )
            #expect(de.badArchives.contains { $0.hasPrefix(hour8) && $0.contains("no signature by a configured key") })
            #expect(audit.lines.last == "2 missing", "\(audit.lines)")
            #expect(audit.lines.contains("DE 2026-11-22 hour 8: 2 missing (origin DE 2)"))
        }
    }
}
