// The payload a phone uploads: its keys with transmission risk levels, encrypted check-ins, padding to one size.

import Crypto
import ENModels
import Foundation
import SwiftProtobuf
import _CryptoExtras

enum SubmissionBuilder {
    /// Transmission risk level by days before the submission (0 = today), the app's default vector when the user
    /// gave no symptom information. Keys older than 13 days are not submitted.
    static let transmissionRiskByDaysAgo = [5, 6, 8, 8, 8, 7, 5, 3, 2, 1, 1, 1, 1, 1]
    /// Every payload, real or dummy, is padded to this many bytes, so its size tells nothing.
    static let paddedSize = 4096
    /// The most encrypted check-ins (about 106 bytes each) that fit beside 14 keys into `paddedSize`.
    static let maximumCheckIns = 30

    /// The real payload: the phone's keys of the last 14 days, `checkIns` encrypted check-ins, padding; consent to
    /// federation, the backend's country as origin, and the countries visited besides. `submissionType` makes it a
    /// self-report of that type.
    static func payload(
        keys: [ExposureKey],
        checkIns: Int,
        now: Date,
        rapidTest: Bool = false,
        origin: String = "DE",
        visited: [String] = [],
        submissionType: SubmissionPayload.SubmissionType? = nil
    ) throws -> [UInt8] {
        let today = ENInterval.dayStart(of: ENInterval.number(of: now))
        var payload = SubmissionPayload()
        payload.keys = keys.compactMap { key in
            let daysAgo = Int((Int64(today) - Int64(key.rollingStartIntervalNumber)) / Int64(ENInterval.perDay))
            guard daysAgo >= 0, daysAgo < Self.transmissionRiskByDaysAgo.count else { return nil }
            var tek = TemporaryExposureKey()
            tek.keyData = key.keyData
            tek.rollingStartIntervalNumber = Int32(key.rollingStartIntervalNumber)
            tek.rollingPeriod = Int32(key.rollingPeriod)
            tek.transmissionRiskLevel = Int32(Self.transmissionRiskByDaysAgo[daysAgo])
            return tek
        }
        payload.origin = origin
        payload.visitedCountries = [origin] + visited.filter { $0 != origin }
        // Self-reported keys never leave the country (cwa-server §1.8), so a self-report does not consent.
        payload.consentToFederation = submissionType == nil
        payload.submissionType = submissionType ?? (rapidTest ? .rapidTest : .pcrTest)
        payload.checkInProtectedReports = try (0..<checkIns).map { index in
            try CheckInEncryption.report(
                locationID: Data(SHA256.hash(data: Array("cwa simulated location \(index) \(UUID())".utf8))),
                start: ENInterval.number(of: now) - UInt32(144 + 6 * (index + 1)),
                period: 6,
                transmissionRiskLevel: 6
            )
        }
        return try self.padded(payload)
    }

    /// A payload with the keys of a new phone's last 14 days: a dummy's body (`cwa-fake: 1`, the same shape and size
    /// as a real one), or a load test's real submission.
    static func withRandomKeys(now: Date) throws -> [UInt8] {
        try self.payload(keys: PhoneState.new(days: 14, now: now).keys, checkIns: 0, now: now)
    }

    /// The payload with `requestPadding` filling it up to `paddedSize` bytes (or unpadded when it is larger).
    static func padded(_ payload: SubmissionPayload) throws -> [UInt8] {
        var payload = payload
        payload.requestPadding = Data()
        let bare = try payload.serializedBytes() as [UInt8]
        // Field 2 costs its tag (1 byte) and a length varint (1–2 bytes here) besides the padding itself.
        var padding = max(0, Self.paddedSize - bare.count - 3)
        for _ in 0..<3 {
            payload.requestPadding = Data(repeating: 0x61, count: padding)
            let size = (try payload.serializedBytes() as [UInt8]).count
            if size == Self.paddedSize || padding == 0 { break }
            padding = max(0, padding + Self.paddedSize - size)
        }
        // Random bytes in one call (a key of that size), not one system call per byte.
        let count = payload.requestPadding.count
        payload.requestPadding =
            count == 0 ? Data() : SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Data($0) }
        return try payload.serializedBytes()
    }
}

/// Check-ins as the app encrypts them for trace warnings: a `CheckInRecord` under AES-256-CBC with a key derived
/// from the location id, and an HMAC-SHA256 over IV and ciphertext. Only phones that were at the location (and so
/// know its id) can decrypt a published warning; the server stores the reports as they are.
enum CheckInEncryption {
    static func encryptionKey(locationID: Data) -> SymmetricKey {
        SymmetricKey(data: SHA256.hash(data: Array("CWA-CRYPT".utf8) + Array(locationID)))
    }

    static func macKey(locationID: Data) -> SymmetricKey {
        SymmetricKey(data: SHA256.hash(data: Array("CWA-MAC".utf8) + Array(locationID)))
    }

    /// One report: `locationIdHash` (32 bytes), a random `iv` (16), `encryptedCheckInRecord` (one block, 16) and `mac`
    /// (32).
    static func report(
        locationID: Data,
        start: UInt32,
        period: UInt32,
        transmissionRiskLevel: UInt32
    ) throws -> CheckInProtectedReport {
        var record = CheckInRecord()
        record.startIntervalNumber = start
        record.period = period
        record.transmissionRiskLevel = transmissionRiskLevel
        let iv = AES._CBC.IV()
        let ciphertext = try AES._CBC.encrypt(
            try record.serializedBytes() as [UInt8],
            using: self.encryptionKey(locationID: locationID),
            iv: iv
        )
        var report = CheckInProtectedReport()
        report.locationIDHash = QRCodePayload.locationIDHash(ofLocationID: locationID)
        report.iv = Data(iv)
        report.encryptedCheckInRecord = ciphertext
        report.mac = Data(
            HMAC<SHA256>.authenticationCode(
                for: Array(iv) + Array(ciphertext),
                using: self.macKey(locationID: locationID)
            )
        )
        return report
    }

    /// The record of a report, if the MAC is right for `locationID`.
    static func decrypt(_ report: CheckInProtectedReport, locationID: Data) throws -> CheckInRecord? {
        let expected = HMAC<SHA256>.authenticationCode(
            for: Array(report.iv) + Array(report.encryptedCheckInRecord),
            using: self.macKey(locationID: locationID)
        )
        guard Data(expected) == report.mac else { return nil }
        let plain = try AES._CBC.decrypt(
            report.encryptedCheckInRecord,
            using: self.encryptionKey(locationID: locationID),
            iv: try AES._CBC.IV(ivBytes: report.iv)
        )
        return try CheckInRecord(serializedBytes: Array(plain))
    }
}
