// The layout of the key tree and its indexes, object retention, the directory store and the publisher's decisions.

import Crypto
import ENKeyStore
import ENModels
import Foundation
import Logging
import SwiftProtobuf
import Testing

@testable import DistributionService

@Suite("Tree layout and publishing")
struct TreeAndPublishingTests {
    /// 2026-11-22 10:00 UTC.
    static let currentHour: Int64 = 20_779 * 24 + 10
    static let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    static func assembler(_ change: (inout KeyDistributionPolicy) -> Void = { _ in }) -> KeyTreeAssembler {
        var policy = KeyDistributionPolicy()
        change(&policy)
        return KeyTreeAssembler(policy: policy, signer: ArchiveTests.signer(), logger: Self.logger)
    }

    static func bundles(hours: [Int64: Int]) -> [String: FolderKeys] {
        var keys: HourlyKeys = [:]
        var seed: UInt64 = 0
        for (hour, count) in hours {
            keys[hour] = (0..<count).map { _ in
                seed += 1
                var key = ArchiveTests.keys(1)[0]
                key.keyData = KeyData(high: seed, low: seed)
                return key
            }
        }
        let lastDay = (keys.keys.max() ?? 0) / 24
        let folder = FolderKeys(
            hours: keys,
            days: KeyBundler(policy: KeyDistributionPolicy()).days(of: keys, through: lastDay).days
        )
        return ["DE": folder, "EUR": folder]
    }

    static func json(_ plan: KeyTreeAssembler.Plan, _ key: String) -> String? {
        plan.indexes.first { $0.key == key }.map { String(decoding: $0.body, as: UTF8.self) }
    }

    @Test("indexes: complete days only, hour folders for yesterday and today, countries DE and EUR")
    func indexes() {
        let today = Self.currentHour / 24
        let hours: [Int64: Int] = [
            (today - 3) * 24 + 5: 2,  // three days ago: a day archive, no hour folder
            (today - 1) * 24 + 0: 1,  // yesterday
            (today - 1) * 24 + 23: 0,  // yesterday, empty (a walked hour)
            today * 24 + 2: 4,  // today: hour folder only
        ]
        let plan = Self.assembler().plan(Self.bundles(hours: hours), currentHour: Self.currentHour) { _ in false }
        #expect(Self.json(plan, "version/v1/diagnosis-keys/country") == #"["DE","EUR"]"#)
        #expect(Self.json(plan, "version/v1/diagnosis-keys/country/DE/date") == #"["2026-11-19","2026-11-21"]"#)
        #expect(Self.json(plan, "version/v1/diagnosis-keys/country/DE/date/2026-11-21/hour") == "[0,23]")
        #expect(Self.json(plan, "version/v1/diagnosis-keys/country/EUR/date/2026-11-22/hour") == "[2]")
        #expect(Self.json(plan, "version/v1/diagnosis-keys/country/DE/date/2026-11-19/hour") == nil)

        let jobs = Set(plan.jobs.map(\.key))
        #expect(jobs.contains("version/v1/diagnosis-keys/country/DE/date/2026-11-19"))
        #expect(!jobs.contains("version/v1/diagnosis-keys/country/DE/date/2026-11-22"))
        #expect(jobs.contains("version/v1/diagnosis-keys/country/DE/date/2026-11-21/hour/23"))
        #expect(jobs.contains("version/v1/diagnosis-keys/country/DE/date/2026-11-22/hour/2"))
        #expect(!jobs.contains { $0.hasPrefix("version/v1/diagnosis-keys/country/DE/date/2026-11-19/hour") })
        // Day archives are also folders (they have an hour folder), so on disk they are `<day>/index`.
        #expect(plan.jobs.first { $0.key.hasSuffix("date/2026-11-21") }?.isDirectoryIndex == true)
        #expect(plan.jobs.first { $0.key.hasSuffix("hour/0") }?.isDirectoryIndex == false)
    }

    @Test("published key files are not rebuilt, and stay listed")
    func publishedNotRebuilt() throws {
        let today = Self.currentHour / 24
        let hours: [Int64: Int] = [(today - 1) * 24 + 1: 5, (today - 1) * 24 + 2: 2]
        let published = "version/v1/diagnosis-keys/country/DE/date/2026-11-21/hour/2"
        let again = Self.assembler().plan(Self.bundles(hours: hours), currentHour: Self.currentHour) { $0 == published }
        #expect(!again.jobs.contains { $0.key == published })
        #expect(again.unchanged == 1)
        #expect(Self.json(again, "version/v1/diagnosis-keys/country/DE/date/2026-11-21/hour") == "[1,2]")
    }

    @Test("hour archives carry their hour's window and region; day archives their day's")
    func windows() throws {
        let today = Self.currentHour / 24
        let hour = (today - 1) * 24 + 7
        let plan = Self.assembler().plan(Self.bundles(hours: [hour: 3]), currentHour: Self.currentHour) { _ in false }
        let hourJob = try #require(
            plan.jobs.first { $0.key == "version/v1/diagnosis-keys/country/EUR/date/2026-11-21/hour/7" }
        )
        let hourExport = try TemporaryExposureKeyExport(serializedBytes: Array(try hourJob.content().dropFirst(16)))
        #expect(
            hourExport.startTimestamp == UInt64(hour * 3600) && hourExport.endTimestamp == UInt64((hour + 1) * 3600)
        )
        #expect(hourExport.region == "EUR" && hourExport.keys.count == 3)
        let dayJob = try #require(plan.jobs.first { $0.key == "version/v1/diagnosis-keys/country/DE/date/2026-11-21" })
        let dayExport = try TemporaryExposureKeyExport(serializedBytes: Array(try dayJob.content().dropFirst(16)))
        #expect(
            dayExport.startTimestamp == UInt64((today - 1) * 86_400) && dayExport.endTimestamp == UInt64(today * 86_400)
        )
    }

    @Test("object retention: days past 14, hour folders before yesterday, trace-warning hours past 14 days")
    func objectRetention() {
        let retention = ObjectRetention(policy: KeyDistributionPolicy(), currentHour: Self.currentHour)
        let base = "version/v1/diagnosis-keys/country/DE/date/"
        let old = Self.currentHour - 14 * 24 - 1
        let keys: Set<String> = [
            base + "2026-11-07", base + "2026-11-07/hour/3", base + "2026-11-08",  // 15 and 14 days ago
            base + "2026-11-20/hour", base + "2026-11-20/hour/4", base + "2026-11-20",  // 2 days ago
            base + "2026-11-21/hour/4", "version/v1/diagnosis-keys/country/EUR/date/2026-11-01",
            "version/v2/twp/country/DE/hour/\(old)", "version/v2/twp/country/DE/hour/\(old + 1)",
            "version/v1/twp/country/DE/hour/\(old)", "version/v2/twp/country/DE/hour", "version/v2/app_config_ios",
        ]
        #expect(
            retention.expired(keys)
                == [
                    base + "2026-11-07", base + "2026-11-07/hour/3", base + "2026-11-20/hour",
                    base + "2026-11-20/hour/4",
                    "version/v1/diagnosis-keys/country/EUR/date/2026-11-01", "version/v1/twp/country/DE/hour/\(old)",
                    "version/v2/twp/country/DE/hour/\(old)",
                ].sorted()
        )
    }

    // MARK: - Directory store

    static func temporaryStore() throws -> DirectoryStore {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cdn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        return DirectoryStore(root: root)
    }

    @Test("the directory store keeps folder-files as <key>/index, lists logical keys, reads checksums, prunes folders")
    func directoryStore() async throws {
        let store = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: store.root) }
        let signer = ArchiveTests.signer()
        let index = CDNObject.index("version/v1/x/country", json: #"["DE"]"#)
        let day = try CDNObject.archive(
            "version/v1/x/country/DE/date/2026-11-21",
            content: [1, 2, 3],
            signer: signer,
            isDirectoryIndex: true
        )
        let hour = try CDNObject.archive("version/v1/x/country/DE/date/2026-11-21/hour/3", content: [4], signer: signer)
        for object in [index, day, hour] { try await store.put(object) }

        #expect(FileManager.default.fileExists(atPath: store.root.path + "/version/v1/x/country/index"))
        #expect(
            FileManager.default.fileExists(atPath: store.root.path + "/version/v1/x/country/DE/date/2026-11-21/index")
        )
        #expect(try await store.list(prefix: "version/") == [index.key, day.key, hour.key])
        #expect(try await store.list(prefix: "version/v1/x/country/DE/") == [day.key, hour.key])
        #expect(try await store.checksum(of: index.key) == index.checksum)
        // An archive's checksum is its content's, so a re-signed archive with the same content compares equal.
        #expect(try await store.checksum(of: day.key) == CWAHash.of([1, 2, 3]))
        #expect(try await store.checksum(of: "version/absent") == nil)

        try await store.delete(hour.key)
        try await store.delete(day.key)
        #expect(!FileManager.default.fileExists(atPath: store.root.path + "/version/v1/x/country/DE"))
        #expect(try await store.list(prefix: "") == [index.key])
        try await store.delete("version/never-there")
    }

    @Test("a reader never sees a partial file: while one object is rewritten, every read is one whole version")
    func atomicReplace() async throws {
        let store = try Self.temporaryStore()
        defer { try? FileManager.default.removeItem(at: store.root) }
        let versions = (0..<20).map { version in
            CDNObject.index(
                "version/big",
                json: "[" + String(repeating: "\(version % 10),", count: 200_000) + "0]",
                isDirectoryIndex: false
            )
        }
        try await store.put(versions[0])
        let path = store.root.path + "/version/big"
        let bodies = Set(versions.map { Data($0.body) })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for version in versions { try await store.put(version) }
            }
            group.addTask {
                for _ in 0..<200 {
                    let data = try #require(FileManager.default.contents(atPath: path))
                    #expect(bodies.contains(data))
                }
            }
            try await group.waitForAll()
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: store.root.path + "/version").filter {
            $0.hasPrefix(".tmp-")
        }
        #expect(leftovers.isEmpty)
    }

    // MARK: - Publisher

    /// An in-memory store that can fail a number of operations (unit tests only).
    final class MemoryStore: ObjectStore, @unchecked Sendable {
        private let lock = NSLock()
        private var objects: [String: CDNObject] = [:]
        private var failuresLeft: Int
        private(set) var puts: [String] = []

        init(failures: Int = 0) {
            self.failuresLeft = failures
        }

        var description: String { "memory" }

        func list(prefix: String) async throws -> Set<String> {
            self.lock.withLock { Set(self.objects.keys.filter { $0.hasPrefix(prefix) }) }
        }

        func checksum(of key: String) async throws -> String? {
            self.lock.withLock { self.objects[key]?.checksum }
        }

        func get(_ key: String) async throws -> [UInt8]? {
            self.lock.withLock { self.objects[key]?.body }
        }

        func put(_ object: CDNObject) async throws {
            try self.lock.withLock {
                if self.failuresLeft > 0 {
                    self.failuresLeft -= 1
                    throw CocoaError(.fileWriteUnknown)
                }
                self.objects[object.key] = object
                self.puts.append(object.key)
            }
        }

        func delete(_ key: String) async throws {
            _ = self.lock.withLock { self.objects.removeValue(forKey: key) }
        }

        func body(_ key: String) -> [UInt8]? {
            self.lock.withLock { self.objects[key]?.body }
        }
    }

    static func publisher(_ store: MemoryStore, _ change: (inout PublishPolicy) -> Void = { _ in }) -> Publisher {
        var policy = PublishPolicy()
        policy.backoff = .milliseconds(1)
        change(&policy)
        return Publisher(store: store, policy: policy, logger: Self.logger)
    }

    @Test("published key files are never rewritten; other objects are uploaded only when their checksum changed")
    func publishDecisions() async throws {
        let store = MemoryStore()
        let publisher = Self.publisher(store)
        let signer = ArchiveTests.signer()
        let hour = try CDNObject.archive("version/v1/a/hour/3", content: [1], signer: signer)
        let index = CDNObject.index("version/v1/a/hour", json: "[3]")
        let config = try CDNObject.archive("version/v2/app_config_ios", content: [9], signer: signer)
        let first = try await publisher.publish([index, hour, config], existing: [])
        #expect(first.uploaded == 3)
        // Indexes go last.
        #expect(store.puts.last == index.key)

        let changedHour = try CDNObject.archive(hour.key, content: [1, 2], signer: signer)
        let resignedConfig = try CDNObject.archive(config.key, content: [9], signer: signer)
        let changedIndex = CDNObject.index(index.key, json: "[3,4]")
        let existing = try await store.list(prefix: "")
        let second = try await publisher.publish([changedHour, resignedConfig, changedIndex], existing: existing)
        #expect(second.uploaded == 1 && second.unchanged == 2)
        #expect(store.body(hour.key) == hour.body)
        #expect(store.body(index.key) == changedIndex.body)

        let forced = Self.publisher(store) { $0.forceUpdateKeyFiles = true }
        _ = try await forced.publish([changedHour], existing: existing)
        #expect(store.body(hour.key) == changedHour.body)
    }

    @Test("indexes go after the objects they name, the deepest first, so no index ever names a missing object")
    func indexOrder() async throws {
        let store = MemoryStore()
        let hours = CDNObject.index("version/v1/twp/country/DE/hour", json: #"{"oldest":null,"latest":null}"#)
        let countries = CDNObject.index("version/v1/twp/country", json: #"["DE"]"#)
        let root = CDNObject.index("version", json: #"["v1"]"#)
        let file = CDNObject.emptyFile("version/v1/twp/country/DE/hour/7")
        let publisher = Self.publisher(store) { $0.parallelism = 4 }
        _ = try await publisher.publish([root, countries, hours, file], existing: [])
        #expect(store.puts == [file.key, hours.key, countries.key, root.key])
    }

    @Test("failures are retried; too many failed operations abort, and a failed file keeps the indexes untouched")
    func failures() async throws {
        let objects = (0..<5).map { CDNObject.emptyFile("version/v1/twp/country/DE/hour/\($0)") }
        let index = CDNObject.index("version/v1/twp/country/DE/hour", json: #"{"oldest":0,"latest":4}"#)

        // Two failures, three attempts each: all succeed after retries.
        let flaky = MemoryStore(failures: 2)
        let outcome = try await Self.publisher(flaky).publish(objects + [index], existing: [])
        #expect(outcome.uploaded == 6)

        // Every try of one file fails: the run fails and the index is not published.
        let broken = MemoryStore(failures: 3)
        await #expect(throws: PublishError.self) {
            try await Self.publisher(broken) { $0.parallelism = 1 }.publish(objects + [index], existing: [])
        }
        #expect(broken.body(index.key) == nil)

        // More failed operations than allowed abort early.
        let dead = MemoryStore(failures: 1_000)
        await #expect(throws: PublishError.self) {
            try await Self.publisher(dead) {
                $0.attempts = 1
                $0.maxFailedOperations = 2
                $0.parallelism = 1
            }.publish(objects, existing: [])
        }
        #expect(try await dead.list(prefix: "").isEmpty)
    }
}
