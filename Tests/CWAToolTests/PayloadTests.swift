// The phone's payloads: real and dummy submissions of equal size, encrypted check-ins.

import Crypto
import ENModels
import Foundation
import SwiftProtobuf
import Testing

@testable import CWATool

@Suite("cwa payloads")
struct PayloadTests {
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    @Test("a real payload: 14 keys with the TRL vector by age, origin and consent, padded to exactly 4096 bytes")
    func payload() throws {
        let phone = PhoneState.new(days: 16, now: Self.now)

        let bytes = try SubmissionBuilder.payload(keys: phone.keys, checkIns: 3, now: Self.now)
        let payload = try SubmissionPayload(serializedBytes: bytes)

        #expect(bytes.count == SubmissionBuilder.paddedSize)
        #expect(payload.keys.count == 14)
        let today = Int32(ENInterval.dayStart(of: ENInterval.number(of: Self.now)))
        for key in payload.keys {
            let daysAgo = Int((today - key.rollingStartIntervalNumber) / 144)
            #expect(key.transmissionRiskLevel == Int32(SubmissionBuilder.transmissionRiskByDaysAgo[daysAgo]))
        }
        #expect(payload.origin == "DE")
        #expect(payload.visitedCountries == ["DE"])
        #expect(payload.consentToFederation)
        #expect(payload.submissionType == .pcrTest)
        #expect(payload.checkInProtectedReports.count == 3)
        for report in payload.checkInProtectedReports {
            #expect(report.locationIDHash.count == 32)
            #expect(report.iv.count == 16)
            #expect(report.encryptedCheckInRecord.count == 16)
            #expect(report.mac.count == 32)
        }
    }

    @Test("a dummy payload has the size of a real one, with other keys each time")
    func dummy() throws {
        let first = try SubmissionBuilder.withRandomKeys(now: Self.now)
        let second = try SubmissionBuilder.withRandomKeys(now: Self.now)

        #expect(first.count == SubmissionBuilder.paddedSize)
        #expect(second.count == SubmissionBuilder.paddedSize)
        #expect(first != second)
        #expect(try SubmissionPayload(serializedBytes: first).keys.count == 14)
    }

    @Test("a check-in decrypts with its location id and is refused under another")
    func checkInEncryption() throws {
        let location = Data(SHA256.hash(data: Array("a venue".utf8)))
        let other = Data(SHA256.hash(data: Array("another venue".utf8)))

        let report = try CheckInEncryption.report(
            locationID: location,
            start: 2_990_000,
            period: 6,
            transmissionRiskLevel: 7
        )

        #expect(report.locationIDHash == QRCodePayload.locationIDHash(ofLocationID: location))
        let record = try #require(try CheckInEncryption.decrypt(report, locationID: location))
        #expect(record.startIntervalNumber == 2_990_000)
        #expect(record.period == 6)
        #expect(record.transmissionRiskLevel == 7)
        #expect(try CheckInEncryption.decrypt(report, locationID: other) == nil)
    }
}
