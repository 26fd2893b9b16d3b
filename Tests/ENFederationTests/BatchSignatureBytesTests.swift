// The canonical bytes of a batch, pinned for fixed keys (cwa-satellites §5.4); the expected records were computed
// from the specification's rules by an independent script, not by this code.

import ENModels
import Foundation
import Testing

@testable import ENFederation

@Suite("Batch signature bytes")
struct BatchSignatureBytesTests {
    static func key(
        _ keyData: [UInt8],
        rsin: UInt32,
        period: UInt32,
        trl: Int32,
        visited: [String],
        origin: String,
        reportType: ReportType,
        dsos: Int32
    ) -> FederationDiagnosisKey {
        var key = FederationDiagnosisKey()
        key.keyData = Data(keyData)
        key.rollingStartIntervalNumber = rsin
        key.rollingPeriod = period
        key.transmissionRiskLevel = trl
        key.visitedCountries = visited
        key.origin = origin
        key.reportType = reportType
        key.daysSinceOnsetOfSymptoms = dsos
        return key
    }

    /// Negative DSOS, two visited countries, period 144.
    static let first = key(
        Array(0..<16),
        rsin: 2_714_400,
        period: 144,
        trl: 5,
        visited: ["DE", "FR"],
        origin: "DE",
        reportType: .confirmedTest,
        dsos: -1
    )
    /// No visited country, period 1, the "unknown" TRL, a self report, DSOS 4000.
    static let second = key(
        Array(repeating: 0xFF, count: 16),
        rsin: 2_714_544,
        period: 1,
        trl: Int32.max,
        visited: [],
        origin: "FR",
        reportType: .selfReport,
        dsos: 4000
    )
    /// Thirty visited countries.
    static let third = key(
        Array(100..<116),
        rsin: 2_714_256,
        period: 72,
        trl: 1,
        visited: CountryCode.euGateway,
        origin: "DE",
        reportType: .confirmedClinicalDiagnosis,
        dsos: -14
    )

    @Test("each field is Base64 followed by a dot, integers big-endian and signed")
    func records() {
        #expect(
            String(decoding: BatchSignatureBytes.record(of: Self.first), as: UTF8.self)
                == "AAECAwQFBgcICQoLDA0ODw==.AClrIA==.AAAAkA==.AAAABQ==.REUsRlI=.REU=.AAAAAQ==./////w==."
        )
        #expect(
            String(decoding: BatchSignatureBytes.record(of: Self.second), as: UTF8.self)
                == "/////////////////////w==.AClrsA==.AAAAAQ==.f////w==..RlI=.AAAAAw==.AAAPoA==."
        )
        #expect(
            String(decoding: BatchSignatureBytes.record(of: Self.third), as: UTF8.self)
                == "ZGVmZ2hpamtsbW5vcHFycw==.AClqkA==.AAAASA==.AAAAAQ==."
                + "QVQsQkUsQkcsQ1ksQ1osREUsREssRUUsRVMsRkksRlIsR1IsSFIsSFUsSUUsSVMsSVQsTEksTFQsTFUsTFYsTVQsTkwsTk8s"
                + "UEwsUFQsUk8sU0UsU0ksU0s=.REU=.AAAAAg==.////8g==."
        )
    }

    @Test("the batch is the records in the order of their Base64 encodings, whatever the input order")
    func batchOrder() {
        let records = [Self.first, Self.second, Self.third].map(BatchSignatureBytes.record(of:))
        let expected = records[1] + records[0] + records[2]
        #expect(BatchSignatureBytes.batch(of: [Self.first, Self.second, Self.third]) == expected)
        #expect(BatchSignatureBytes.batch(of: [Self.third, Self.first, Self.second]) == expected)
        #expect(BatchSignatureBytes.batch(of: []) == [])
    }

    @Test("the order of the Base64 encodings differs from the order of the raw records")
    func base64OrderIsNotRawOrder() {
        // Key data Base64 "SAAA…" and "S0AA…": raw, "S0" sorts first; encoded ("U0FB…" and "UzBB…"), "SA" does.
        let sa = Self.key(
            [0x48] + Array(repeating: 0, count: 15),
            rsin: 2_714_400,
            period: 144,
            trl: 2,
            visited: ["DE"],
            origin: "DE",
            reportType: .confirmedTest,
            dsos: 0
        )
        var s0 = sa
        s0.keyData = Data([0x4B, 0x40] + Array(repeating: 0, count: 14))
        let recordSA = BatchSignatureBytes.record(of: sa)
        let recordS0 = BatchSignatureBytes.record(of: s0)
        #expect(recordS0.lexicographicallyPrecedes(recordSA))
        #expect(BatchSignatureBytes.batch(of: [s0, sa]) == recordSA + recordS0)
        #expect(
            String(decoding: recordS0, as: UTF8.self)
                == "S0AAAAAAAAAAAAAAAAAAAA==.AClrIA==.AAAAkA==.AAAAAg==.REU=.REU=.AAAAAQ==.AAAAAA==."
        )
    }
}
