// Submission payloads as phones send them: keys of the last days, check-ins, the headers of a real request.

package import ENModels
package import Foundation
package import HTTPTypes
package import NIOCore
import SwiftProtobuf

/// Valid payloads around a fixed day; tests break them one field at a time.
package enum SubmissionPayloads {
    /// 2023-11-14 22:13:20 UTC.
    package static let start = Date(timeIntervalSince1970: 1_700_000_000)
    /// The ten-minute interval of midnight UTC that begins `start`'s day.
    package static let midnight = Int(start.timeIntervalSince1970) / 600 / 144 * 144

    /// A key that started `daysAgo` midnights before `start`'s day.
    package static func key(
        daysAgo: Int = 1,
        trl: Int32? = 6,
        dsos: Int32? = nil,
        period: Int32 = 144
    ) -> TemporaryExposureKey {
        var key = TemporaryExposureKey()
        key.keyData = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        key.rollingStartIntervalNumber = Int32(self.midnight - daysAgo * 144)
        key.rollingPeriod = period
        if let trl { key.transmissionRiskLevel = trl }
        if let dsos { key.daysSinceOnsetOfSymptoms = dsos }
        return key
    }

    /// A valid key submission: `count` keys for the days before today.
    package static func payload(
        keys count: Int = 14,
        type: SubmissionPayload.SubmissionType = .pcrTest,
        consent: Bool = true
    ) -> SubmissionPayload {
        var payload = SubmissionPayload()
        payload.keys = (0..<count).map { self.key(daysAgo: $0 % 14 + 1) }
        payload.origin = "DE"
        payload.visitedCountries = ["FR"]
        payload.consentToFederation = consent
        payload.submissionType = type
        payload.requestPadding = Data(repeating: 0x61, count: 100)
        return payload
    }

    package static func protectedReport(location: UInt8 = 1) -> CheckInProtectedReport {
        var report = CheckInProtectedReport()
        report.locationIDHash = Data(repeating: location, count: 32)
        report.iv = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        report.encryptedCheckInRecord = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        report.mac = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        return report
    }

    /// An unencrypted check-in at `location` starting `hoursAgo` before `start`, lasting `minutes`.
    package static func checkIn(location: UInt8 = 7, hoursAgo: Int = 5, minutes: Int = 60, trl: UInt32 = 5) -> CheckIn {
        var checkIn = CheckIn()
        checkIn.locationID = Data(repeating: location, count: 32)
        let start = Int(self.start.timeIntervalSince1970) / 600 - hoursAgo * 6
        checkIn.startIntervalNumber = UInt32(start)
        checkIn.endIntervalNumber = UInt32(start + minutes / 10)
        checkIn.transmissionRiskLevel = trl
        return checkIn
    }

    /// A valid submission on behalf: two encrypted check-ins at one location.
    package static func onBehalfPayload() -> SubmissionPayload {
        var payload = SubmissionPayload()
        payload.submissionType = .hostWarning
        payload.checkInProtectedReports = [self.protectedReport(location: 9), self.protectedReport(location: 9)]
        return payload
    }

    /// The headers of a submission: protobuf, `cwa-fake`, and the TAN when given.
    package static func headers(tan: String? = nil, fake: String = "0") -> HTTPFields {
        var headers: HTTPFields = [.contentType: "application/x-protobuf", HTTPField.Name("cwa-fake")!: fake]
        if let tan { headers[HTTPField.Name("cwa-authorization")!] = tan }
        return headers
    }
}

extension SubmissionPayload {
    /// The payload's wire bytes.
    package var bytes: ByteBuffer { ByteBuffer(bytes: try! self.serializedBytes() as [UInt8]) }
}
