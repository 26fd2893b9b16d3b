// The cwa client's pure parts: payloads and check-ins, archive verification, the portal's pages, lab codes, answer
// sizes, load reports and the Kolmogorov–Smirnov test.

import Crypto
import ENModels
import Foundation
import SwiftProtobuf
import Testing

@testable import CWATool

@Suite("cwa client parts")
struct ClientPartsTests {
    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    // MARK: - Payloads

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

    // MARK: - Archives

    static func archive(keys: [[UInt8]], signingKey: P256.Signing.PrivateKey, tamper: Bool = false) throws -> [UInt8] {
        var export = TemporaryExposureKeyExport()
        export.region = "DE"
        export.batchNum = 1
        export.batchSize = 1
        export.keys = keys.map { data in
            var key = TemporaryExposureKey()
            key.keyData = Data(data)
            key.rollingStartIntervalNumber = 2_990_016
            key.rollingPeriod = 144
            key.transmissionRiskLevel = 6
            return key
        }
        var content = ExportFile.header + (try export.serializedBytes() as [UInt8])
        var signature = TEKSignature()
        signature.signature = try signingKey.signature(for: content).derRepresentation
        var list = TEKSignatureList()
        list.signatures = [signature]
        if tamper { content[content.count - 1] ^= 1 }
        return ZipArchive.make([
            ZipArchive.Entry(name: ExportFile.contentEntry, data: content),
            ZipArchive.Entry(name: ExportFile.signatureEntry, data: try list.serializedBytes()),
        ])
    }

    @Test("an archive verifies with the signer's public key only, not after a bit flips, and its key order is checked")
    func archiveVerification() throws {
        let signer = P256.Signing.PrivateKey()
        let sortedKeys: [[UInt8]] = [[0x01] + Array(repeating: 0, count: 15), [0x80] + Array(repeating: 0, count: 15)]

        let good = try ExportArchive(bytes: try Self.archive(keys: sortedKeys, signingKey: signer))
        let tampered = try ExportArchive(bytes: try Self.archive(keys: sortedKeys, signingKey: signer, tamper: true))
        let unsorted = try ExportArchive(bytes: try Self.archive(keys: sortedKeys.reversed(), signingKey: signer))

        #expect(good.verifiedSignatures(with: signer.publicKey).count == 1)
        #expect(good.verifiedSignatures(with: P256.Signing.PrivateKey().publicKey).isEmpty)
        #expect(tampered.verifiedSignatures(with: signer.publicKey).isEmpty)
        #expect(good.export?.keys.count == 2)
        #expect(good.keysAreSorted)
        #expect(!unsorted.keysAreSorted)
        #expect(throws: ExportArchive.Failure.self) { try ExportArchive(bytes: Array("not a zip".utf8)) }
        #expect(throws: ExportArchive.Failure.self) {
            try ExportArchive(
                bytes: ZipArchive.make([ZipArchive.Entry(name: ExportFile.contentEntry, data: [1, 2, 3])])
            )
        }
    }

    // MARK: - Portal pages, lab codes, sizes

    @Test("the portal's pages: the CSRF token, an element's text with its children, the first offered authority")
    func portalPages() {
        let page = """
            <form><input type="hidden" name="csrf" value="tok-123"><select name="authority">
            <option value="">choose</option><option value="1.2.3">Gesundheitsamt A</option></select></form>
            <output id="teletan" class="teletan">R7KQ2MXP9T</output>
            <p class="error" id="rate-limited">One teleTAN per 30 seconds: please wait <strong>20</strong> seconds.</p>
            """

        #expect(PortalSession.attribute(after: #"name="csrf" value=""#, in: page) == "tok-123")
        #expect(PortalSession.element("teletan", in: page) == "R7KQ2MXP9T")
        #expect(
            PortalSession.element("rate-limited", in: page) == "One teleTAN per 30 seconds: please wait 20 seconds."
        )
        #expect(PortalSession.element("missing", in: page) == nil)
        #expect(PortalSession.firstOption(in: page) == "1.2.3")
        #expect(PortalSession.formEncoded("a b+c&d") == "a%20b%2Bc%26d")
    }

    @Test("lab result codes for PCR and rapid tests, and the ids a lab posts and a phone registers")
    func labCodes() {
        #expect(LabResult.allCases.map { $0.code(rapid: false) } == [nil, 1, 2, 3])
        #expect(LabResult.allCases.map { $0.code(rapid: true) } == [5, 6, 7, 8])
        let posted = LabID.posted(guid: "guid-1")
        #expect(posted.count == 64)
        #expect(LabID.registered(guid: "guid-1", rapid: false) == posted)
        #expect(LabID.registered(guid: "guid-1", rapid: true) != posted)
        #expect(LabID.registered(guid: "guid-1", rapid: true).count == 64)
    }

    @Test("an answer's size counts the status line, every header and the body")
    func wireSize() {
        let reply = Reply(
            status: 200,
            headers: [("Content-Length", "0"), ("cwa-saved-checkins", "0")],
            body: [],
            seconds: 0.01
        )

        // "HTTP/1.1 200 OK\r\n" 17 + "Content-Length: 0\r\n" 19 + "cwa-saved-checkins: 0\r\n" 23 + "\r\n" 2
        #expect(reply.wireSize == 61)
        #expect(reply.header("content-length") == "0")
    }

    // MARK: - Load reports and statistics

    @Test("a load report counts statuses, errors and failures and prints percentiles")
    func loadReport() throws {
        var report = LoadReport()
        for millis in 1...100 {
            report.record(
                .success(Reply(status: millis <= 98 ? 200 : 503, headers: [], body: [], seconds: 0)),
                latency: .milliseconds(millis)
            )
        }
        report.record(.failure(ClientFailure("connection refused")), latency: .milliseconds(5))
        report.elapsed = .seconds(2)

        #expect(report.completed == 101)
        #expect(report.failures == 3)
        #expect(report.statuses == [200: 98, 503: 2])
        let p50 = try #require(Double(report.millis(50)))
        #expect(abs(p50 - 50) < 1)
        let summary = report.summary(title: "test")
        #expect(summary.contains("HTTP 200: 98, HTTP 503: 2"))
        #expect(summary.contains("throughput 50.5 requests/s"))
        #expect(summary.contains("HDR histogram"))
    }

    @Test("Kolmogorov–Smirnov: equal samples give D 0 and p 1, disjoint ones D 1 and p ≈ 0, λ 1.358 the 5 % level")
    func kolmogorovSmirnov() {
        let sample = (0..<200).map { Double($0) }
        let same = KolmogorovSmirnov(sample, sample.shuffled())
        let disjoint = KolmogorovSmirnov(sample, sample.map { $0 + 1000 })
        let shifted = KolmogorovSmirnov(sample, sample.map { $0 + 20 })

        #expect(same.statistic == 0)
        #expect(same.pValue == 1)
        #expect(disjoint.statistic == 1)
        #expect(disjoint.pValue < 1e-6)
        #expect(abs(shifted.statistic - 0.1) < 1e-9)
        #expect(shifted.pValue > 0.1 && shifted.pValue < 0.5)
        #expect(abs(KolmogorovSmirnov.kolmogorovTail(1.358) - 0.05) < 0.001)
    }
}
