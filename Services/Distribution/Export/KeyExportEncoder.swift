// `export.bin` of a key archive: the 16-byte header and a `TemporaryExposureKeyExport`, encoded by hand for speed.

import ENKeyStore
import ENModels
import SwiftProtobuf

/// Encodes key exports (cwa-server §3.7). The message's scalar fields and signature infos are serialised by
/// swift-protobuf; the keys, field 7 and the bulk of the bytes, are appended by hand in field order. Protobuf
/// serialises fields in number order, so the result is byte-for-byte what swift-protobuf would produce for the
/// whole message (a test holds the two to each other).
enum KeyExportEncoder {
    /// `export.bin` for the keys of the window `[start, end)` (epoch seconds), keys sorted by `key_data`.
    static func exportBin(
        keys: [DistributionKey],
        region: String,
        start: UInt64,
        end: UInt64,
        signatureInfos: [SignatureInfo]
    ) -> [UInt8] {
        var message = TemporaryExposureKeyExport()
        message.startTimestamp = start
        message.endTimestamp = end
        message.region = region
        message.batchNum = 1
        message.batchSize = 1
        message.signatureInfos = signatureInfos
        let head: [UInt8] = (try? message.serializedBytes()) ?? []
        var out = ExportFile.header
        out.reserveCapacity(out.count + head.count + keys.count * 32)
        out += head
        // Sorting hides the upload order. A key stored twice (as a rapid test, then as PCR: two rows) is exported once.
        var previous: KeyData?
        for key in keys.sorted(by: { $0.keyData < $1.keyData }) where key.keyData != previous {
            self.appendKey(key, to: &out)
            previous = key.keyData
        }
        return out
    }

    /// Field 7 (`keys`), one `TemporaryExposureKey` with every field set, report type and DSOS re-encoded from the TRL,
    /// written straight into `out`: its length is known beforehand (six one-byte tags, the key data's length byte and
    /// 16 bytes, five varints).
    static func appendKey(_ key: DistributionKey, to out: inout [UInt8]) {
        let encoding = TRLEncoding.exported(trl: key.transmissionRiskLevel)
        let dsos = Int32(encoding.daysSinceOnsetOfSymptoms)
        let trl = UInt64(bitPattern: Int64(key.transmissionRiskLevel))
        let start = UInt64(bitPattern: Int64(key.rollingStartIntervalNumber))
        let period = UInt64(bitPattern: Int64(key.rollingPeriod))
        let reportType = UInt64(encoding.reportType.rawValue)
        let onset = UInt64(UInt32(bitPattern: (dsos << 1) ^ (dsos >> 31)))
        let length =
            23 + self.varintSize(trl) + self.varintSize(start) + self.varintSize(period) + self.varintSize(reportType)
            + self.varintSize(onset)
        out.append(0x3A)  // 7: keys, length-delimited
        self.appendVarint(UInt64(length), to: &out)
        out.append(0x0A)  // 1: key_data, length-delimited
        out.append(16)
        key.keyData.append(to: &out)
        out.append(0x10)  // 2: transmission_risk_level
        self.appendVarint(trl, to: &out)
        out.append(0x18)  // 3: rolling_start_interval_number
        self.appendVarint(start, to: &out)
        out.append(0x20)  // 4: rolling_period
        self.appendVarint(period, to: &out)
        out.append(0x28)  // 5: report_type
        self.appendVarint(reportType, to: &out)
        out.append(0x30)  // 6: days_since_onset_of_symptoms, sint32 (zig-zag)
        self.appendVarint(onset, to: &out)
    }

    static func varintSize(_ value: UInt64) -> Int {
        max(1, (64 - value.leadingZeroBitCount + 6) / 7)
    }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }
}

/// How the TRL is carried in ENF v2 fields (cwa-server §3.2): exported keys get report type and DSOS from their
/// TRL, so the apps' risk calculation can recover the TRL from what ENF reports. Not persisted.
enum TRLEncoding {
    static func exported(trl: Int32) -> (reportType: ReportType, daysSinceOnsetOfSymptoms: Int) {
        let dsos = trl % 2 == 1 ? 1 : 2
        let reportType: ReportType =
            switch trl {
            case ...2: .recursive
            case 3...4: .selfReport
            case 5...6: .confirmedClinicalDiagnosis
            default: .confirmedTest
            }
        return (reportType, dsos)
    }
}
