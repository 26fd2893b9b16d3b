// The NHS key submission payload and its rules (nhs §4).

import ENKeyStore
import ENModels
import ENNHS
import ENServiceKit
import Foundation

/// A valid NHS submission: its token and the keys that passed the per-key rules.
struct NHSKeyPayload: Sendable, Equatable {
    /// Lower-case UUID.
    var token: String
    var keys: [NHSKey]

    struct NHSKey: Sendable, Equatable {
        var keyData: [UInt8]
        var rollingStartNumber: Int32
        var rollingPeriod: Int32
        /// 0…7 (7 when the app sent none).
        var transmissionRiskLevel: Int32
        var daysSinceOnsetOfSymptoms: Int32?
    }

    /// The most keys one submission may hold; more drop the whole payload (§4 step 2).
    static let maxKeys = 14

    /// The payload in `data` at `now`, or `nil` when nothing is to be stored (§4 steps 1–4): not a JSON object, a
    /// token that is no UUID, a missing key list, more than 14 keys, or no key that passes. Invalid keys are dropped.
    ///
    /// Stricter than the reference, which accepts key data of up to 31 bytes (§13.5): a temporary exposure key has 16
    /// bytes, and only those can be published; `daysSinceOnsetOfSymptoms`, unchecked there, must be within -14…4000
    /// (the range the key store and the export take).
    static func parse(_ data: Data, now: Date) -> NHSKeyPayload? {
        guard let body = try? JSONDecoder().decode(Body.self, from: data),
            let token = UUID(uuidString: body.diagnosisKeySubmissionToken),
            body.temporaryExposureKeys.count <= self.maxKeys
        else { return nil }
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let now10 = seconds / 600
        let min10 = (seconds - 14 * 86_400) / 600
        let keys = body.temporaryExposureKeys.compactMap {
            $0.value.flatMap { self.key($0, now10: now10, min10: min10) }
        }
        guard !keys.isEmpty else { return nil }
        return NHSKeyPayload(token: token.uuidString.lowercased(), keys: keys)
    }

    private static func key(_ entry: WireKey, now10: Int64, min10: Int64) -> NHSKey? {
        let start = entry.rollingStartNumber
        let period = entry.rollingPeriod
        guard let keyData = Data(base64Encoded: entry.key), keyData.count == 16, (1...144).contains(period),
            Int64(start) + Int64(period) >= min10, Int64(start) <= now10
        else { return nil }
        let trl = entry.transmissionRiskLevel ?? 7
        guard (0...7).contains(trl) else { return nil }
        if let dsos = entry.daysSinceOnsetOfSymptoms, !(-14...4000).contains(dsos) { return nil }
        return NHSKey(
            keyData: Array(keyData),
            rollingStartNumber: start,
            rollingPeriod: period,
            transmissionRiskLevel: trl,
            daysSinceOnsetOfSymptoms: entry.daysSinceOnsetOfSymptoms
        )
    }

    /// The JSON as sent: a key that does not decode (a missing field, a string for a number, a number beyond 32 bits)
    /// is dropped alone.
    private struct Body: Decodable {
        var diagnosisKeySubmissionToken: String
        var temporaryExposureKeys: [Lossy<WireKey>]
    }

    private struct WireKey: Decodable {
        var key: String
        var rollingStartNumber: Int32
        var rollingPeriod: Int32
        var transmissionRiskLevel: Int32?
        var daysSinceOnsetOfSymptoms: Int32?
    }

    private struct Lossy<Value: Decodable>: Decodable {
        var value: Value?

        init(from decoder: any Decoder) throws {
            self.value = try? Value(from: decoder)
        }
    }

    /// The rows the key store takes, for a result of `kit`. The NHS scale of transmission risk (0…7) is moved onto
    /// the CWA one (1…8) that the export carries, keeping the order; a missing onset is 0, as the NHS export writes
    /// it (§4). Lab and rapid results are confirmed tests; a self-reported rapid test is a self-report.
    func rows(kit: NHSTestKit) -> [DiagnosisKeyRow] {
        let reportType = Self.reportType(kit)
        return self.keys.map { key in
            DiagnosisKeyRow(
                keyData: key.keyData,
                rollingStartIntervalNumber: key.rollingStartNumber,
                rollingPeriod: key.rollingPeriod,
                transmissionRiskLevel: key.transmissionRiskLevel + 1,
                daysSinceOnsetOfSymptoms: key.daysSinceOnsetOfSymptoms ?? 0,
                reportType: reportType
            )
        }
    }

    /// The stored report type of a result of `kit`: lab and rapid results are confirmed tests; a self-reported rapid test
    /// is a self-report.
    static func reportType(_ kit: NHSTestKit) -> String {
        let type: ReportType = kit == .rapidSelfReported ? .selfReport : .confirmedTest
        return type.storageName ?? "CONFIRMED_TEST"
    }

    /// The stored submission type of a result of `kit`.
    static func submissionType(_ kit: NHSTestKit) -> SubmissionPayload.SubmissionType {
        switch kit {
        case .labResult: .pcrTest
        case .rapidResult: .rapidTest
        case .rapidSelfReported: .srsSelfTest
        }
    }
}
