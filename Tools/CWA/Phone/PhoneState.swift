// A simulated phone, kept in one JSON file between commands.

import Foundation

/// Everything a simulated phone remembers: its own keys, the identifiers it observed, its test registration and
/// what it already downloaded from the CDN.
struct PhoneState: Codable, Sendable {
    /// The phone's temporary exposure keys, one per UTC day, oldest first.
    var keys: [ExposureKey]
    /// Rolling proximity identifiers heard from other phones.
    var observations: [Observation] = []
    /// The registration token of a test (GUID or teleTAN).
    var registrationToken: String?
    /// The last test result polled (0 pending, 1 negative, 2 positive, …).
    var lastTestResult: Int?
    /// The TAN of the last submission, so a test can try to use it again.
    var lastTAN: String?
    /// When the last submission was sent, so `sync --wait` can tell how long its keys took to reach the CDN.
    var submittedAt: Date?
    /// The one-time password of the last self-report, so a test can try to use it again.
    var lastOTP: String?
    /// The NHS test path (`cwa nhs`): the CTA token of the test ordered or typed, the polling token of the order, and
    /// the diagnosis key submission token (from the order or the CTA exchange).
    var nhsCTAToken: String?
    var nhsPollingToken: String?
    var nhsSubmissionToken: String?
    /// CDN archives already checked (their paths), so a sync fetches only new ones.
    var syncedArchives: [String] = []
    /// Exposures found by earlier syncs.
    var exposures: [Exposure] = []
    /// The data of the published keys those exposures came from, so a later archive with the same key adds nothing.
    var matchedKeys: [Data] = []

    /// One interval's worth of another phone's broadcast.
    struct Observation: Codable, Sendable, Equatable {
        var rpi: Data
        var aem: Data
        var interval: UInt32
        /// Minutes heard within the interval (1…10).
        var minutes: Int
        var attenuation: Int
    }

    /// A match between a published key and observations, by UTC day.
    struct Exposure: Codable, Sendable, Equatable {
        var day: String
        var minutes: Int
        var lowestAttenuation: Int
        var transmissionRiskLevel: Int
        /// The CDN archive the key came from.
        var archive: String
    }

    // MARK: - Files

    static func load(_ path: String) throws -> PhoneState {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ClientFailure("no phone at \(path) (create one with: cwa phone --state \(path) new)")
        }
        do {
            return try JSONDecoder().decode(PhoneState.self, from: data)
        } catch {
            throw ClientFailure("\(path) is not a phone state file")
        }
    }

    /// Written to a temporary file and renamed, readable only by the owner (it holds keys and maybe a TAN).
    func save(_ path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        let temporary = path + ".tmp-\(UUID().uuidString.prefix(8))"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600])
        else {
            throw ClientFailure("cannot write \(path)")
        }
        guard rename(temporary, path) == 0 else {
            try? FileManager.default.removeItem(atPath: temporary)
            throw ClientFailure("cannot write \(path)")
        }
    }

    // MARK: - Keys

    /// A new phone with one random key for each of the last `days` UTC days, today included.
    static func new(days: Int, now: Date) -> PhoneState {
        let today = ENInterval.dayStart(of: ENInterval.number(of: now))
        let keys = (0..<days).reversed().map { ago in
            ExposureKey.random(dayStart: today - UInt32(ago) * ENInterval.perDay)
        }
        return PhoneState(keys: keys)
    }

    /// The key the phone broadcast during `interval`.
    func key(at interval: UInt32) -> ExposureKey? {
        self.keys.last { $0.covers(interval) }
    }
}
