// The bytes an EFGS batch signature covers (cwa-server §5.3, cwa-satellites §5.4): one ASCII record per key, the
// records sorted by their Base64 form and concatenated.

package import ENModels
import Foundation

/// The canonical bytes of a batch of federation keys.
///
/// A record is eight fields, each standard Base64 (with `=` padding) followed by `.`: the key data; the rolling start
/// interval number, rolling period and transmission risk level as 4-byte big-endian two's complement; the visited
/// countries joined with `,`; the origin; the report type's enum number and the days since onset of symptoms as
/// 4-byte big-endian two's complement (so a negative DSOS keeps its sign). The batch is the records sorted by the
/// Base64 encoding of each record, compared as strings, concatenated without separator. The same record's SHA-256
/// is the gateway's duplicate-key identity.
package enum BatchSignatureBytes {
    /// The record of one key.
    package static func record(of key: FederationDiagnosisKey) -> [UInt8] {
        var record: [UInt8] = []
        record.reserveCapacity(96)
        func field(_ bytes: some Collection<UInt8>) {
            record.append(contentsOf: Data(bytes).base64EncodedData())
            record.append(UInt8(ascii: "."))
        }
        func integer(_ value: Int32) {
            field(withUnsafeBytes(of: value.bigEndian, Array.init))
        }
        field(key.keyData)
        integer(Int32(bitPattern: key.rollingStartIntervalNumber))
        integer(Int32(bitPattern: key.rollingPeriod))
        integer(key.transmissionRiskLevel)
        field(Array(key.visitedCountries.joined(separator: ",").utf8))
        field(Array(key.origin.utf8))
        integer(Int32(truncatingIfNeeded: key.reportType.rawValue))
        integer(key.daysSinceOnsetOfSymptoms)
        return record
    }

    /// The bytes the batch signature of `keys` covers; the order of `keys` does not matter.
    package static func batch(of keys: some Sequence<FederationDiagnosisKey>) -> [UInt8] {
        // Base64 of ASCII is ASCII, so comparing the encodings bytewise is comparing them as strings.
        let records = keys.map { key in
            let record = self.record(of: key)
            return (sortKey: Array(Data(record).base64EncodedData()), record: record)
        }
        var batch: [UInt8] = []
        batch.reserveCapacity(records.reduce(0) { $0 + $1.record.count })
        for entry in records.sorted(by: { $0.sortKey.lexicographicallyPrecedes($1.sortKey) }) {
            batch.append(contentsOf: entry.record)
        }
        return batch
    }
}
