// The phone simulator's Exposure Notification cryptography against the specification's known answers, and two
// phones meeting and finding each other in published keys.

import Crypto
import ENCrypto
import Foundation
import Testing

@testable import CWATool

@Suite("Exposure Notification crypto and matching")
struct ExposureCryptoTests {
    struct Vectors: Decodable {
        struct Vector: Decodable {
            var interval_number: UInt32
            var rpi_hex: String
            var aem_hex: String
        }

        var tek_hex: String
        var metadata_hex: String
        var rpik_hex: String
        var aemk_hex: String
        var vectors: [Vector]
    }

    static func vectors() throws -> Vectors {
        let url = try #require(
            Bundle.module.url(forResource: "rolling-proximity-ids", withExtension: "json", subdirectory: "Vectors")
        )
        return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }

    /// The bytes of a vector's hex field; a malformed one fails the test (rather than comparing as empty).
    static func bytes(_ hex: String) throws -> [UInt8] {
        try #require(Hex.decode(hex))
    }

    @Test("RPIK, AEMK, every RPI and AEM of the specification's test vectors")
    func knownAnswers() throws {
        let vectors = try Self.vectors()
        let tek = Data(try Self.bytes(vectors.tek_hex))

        let rpik = ExposureCrypto.rollingProximityIdentifierKey(tek)
        let aemk = ExposureCrypto.associatedEncryptedMetadataKey(tek)

        #expect(try rpik.withUnsafeBytes { Array($0) } == Self.bytes(vectors.rpik_hex))
        #expect(try aemk.withUnsafeBytes { Array($0) } == Self.bytes(vectors.aemk_hex))
        try #require(vectors.vectors.count >= 10)
        for vector in vectors.vectors {
            let rpi = ExposureCrypto.rollingProximityIdentifier(key: rpik, interval: vector.interval_number)
            #expect(try rpi == Self.bytes(vector.rpi_hex), "RPI of interval \(vector.interval_number)")
            let aem = ExposureCrypto.associatedEncryptedMetadata(
                key: aemk,
                rpi: rpi,
                metadata: try Self.bytes(vectors.metadata_hex)
            )
            #expect(try aem == Self.bytes(vector.aem_hex), "AEM of interval \(vector.interval_number)")
        }
    }

    @Test("a new phone has one key per UTC day, aligned to midnight, the newest covering now")
    func newPhone() {
        let now = Date(timeIntervalSince1970: 1_795_000_000)

        let phone = PhoneState.new(days: 14, now: now)

        #expect(phone.keys.count == 14)
        #expect(
            phone.keys.allSatisfy {
                $0.rollingStartIntervalNumber % 144 == 0 && $0.rollingPeriod == 144 && $0.keyData.count == 16
            }
        )
        #expect(phone.keys.last?.covers(ENInterval.number(of: now)) == true)
        #expect(
            zip(phone.keys, phone.keys.dropFirst()).allSatisfy {
                $1.rollingStartIntervalNumber - $0.rollingStartIntervalNumber == 144
            }
        )
        #expect(Set(phone.keys.map(\.keyData)).count == 14)
    }

    @Test("B hears A for 25 minutes across three intervals; A's published key is found on that day with 25 minutes")
    func meetingAndMatch() throws {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let a = PhoneState.new(days: 14, now: now)
        let stranger = PhoneState.new(days: 14, now: now)
        let meeting = ENInterval.date(of: ENInterval.dayStart(of: ENInterval.number(of: now)) - 2 * 144 + 73)
            .addingTimeInterval(300)

        let heard = try Encounter.observe(broadcaster: a, from: meeting, minutes: 25, attenuation: 48)

        #expect(heard.map(\.minutes) == [5, 10, 10])
        #expect(
            heard.map(\.interval) == [
                ENInterval.number(of: meeting), ENInterval.number(of: meeting) + 1, ENInterval.number(of: meeting) + 2,
            ]
        )
        let published = (a.keys + stranger.keys).map { (key: $0, transmissionRiskLevel: 8, archive: "hour/1") }
        let matches = Encounter.match(keys: published + published, observations: heard)
        #expect(
            matches.map(\.exposure) == [
                PhoneState.Exposure(
                    day: utcDay(meeting),
                    minutes: 25,
                    lowestAttenuation: 48,
                    transmissionRiskLevel: 8,
                    archive: "hour/1"
                )
            ]
        )
        #expect(matches.map(\.keyData) == [try #require(a.key(at: heard[0].interval)).keyData])
        #expect(Encounter.match(keys: stranger.keys.map { ($0, 8, "x") }, observations: heard).isEmpty)
        // The same key again in a later sync (the day's archive after the hour's) adds nothing.
        #expect(Encounter.match(keys: published, observations: heard, known: Set(matches.map(\.keyData))).isEmpty)
    }

    @Test(
        "another phone's key of the same day, other key data, a key valid on another day, or an AEM of another major version: no match"
    )
    func noFalseMatches() throws {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let a = PhoneState.new(days: 14, now: now)
        let stranger = PhoneState.new(days: 14, now: now)
        let meeting = ENInterval.date(of: ENInterval.dayStart(of: ENInterval.number(of: now)) - 3 * 144 + 10)
        var heard = try Encounter.observe(broadcaster: a, from: meeting, minutes: 10, attenuation: 60)
        let dayKey = try #require(a.key(at: heard[0].interval))
        let strangersKey = try #require(stranger.key(at: heard[0].interval))

        #expect(Encounter.match(keys: [(dayKey, 6, "x")], observations: heard).count == 1)
        #expect(Encounter.match(keys: [(strangersKey, 6, "x")], observations: heard).isEmpty)
        var dayAfter = dayKey
        dayAfter.rollingStartIntervalNumber += 144  // the same key data, valid only the next day
        #expect(Encounter.match(keys: [(dayAfter, 6, "x")], observations: heard).isEmpty)
        var otherKeyData = dayKey
        otherKeyData.keyData[0] ^= 1
        #expect(Encounter.match(keys: [(otherKeyData, 6, "x")], observations: heard).isEmpty)
        // The AEM decrypts to byte 0 = 0x40 (version 1.0); flipping its top bit gives 0xC0, major version 3.
        heard[0].aem[0] ^= 0x80
        #expect(Encounter.match(keys: [(dayKey, 6, "x")], observations: heard).isEmpty)
    }

    @Test("meeting a phone outside its keys' days is refused")
    func meetingOutsideKeys() {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let a = PhoneState.new(days: 2, now: now)
        #expect(throws: ClientFailure.self) {
            try Encounter.observe(
                broadcaster: a,
                from: now.addingTimeInterval(-5 * 86_400),
                minutes: 10,
                attenuation: 50
            )
        }
    }

    @Test("the state file round-trips and is readable only by its owner")
    func stateFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cwa-phone-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var state = PhoneState.new(days: 3, now: Date())
        state.registrationToken = "token"
        state.syncedArchives = ["a/b/1"]

        try state.save(path)
        let loaded = try PhoneState.load(path)

        #expect(loaded.keys == state.keys)
        #expect(loaded.registrationToken == "token")
        #expect(loaded.syncedArchives == ["a/b/1"])
        let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        #expect(throws: ClientFailure.self) { try PhoneState.load(path + ".missing") }
    }
}
