// Which downloaded keys a national backend stores, and how (cwa-server §5.4, §5.6).

import ENFederation
import ENKeyStore
import ENModels
import ENServiceKit
import Foundation

/// The acceptance rules for keys from the gateway and their conversion to stored keys.
struct KeyAcceptance: Sendable {
    /// Report types accepted (`FEDERATION_ALLOWED_REPORT_TYPES`).
    var allowedReportTypes: Set<ReportType> = [.confirmedTest, .confirmedClinicalDiagnosis]
    /// This backend's own country: keys claiming it are not taken from the gateway.
    var ownCountry = "DE"
    var derivations = TEKFieldDerivations.bundled
    /// The TRL of a DSOS the map does not know (`DEFAULT_TRL`).
    var defaultTRL = 1

    /// The stored form of `key`, or why it is refused (a short label for metrics).
    func accept(_ key: FederationDiagnosisKey, now: Date) -> Result<FederatedKey, Refusal> {
        guard self.allowedReportTypes.contains(key.reportType) else { return .failure(.reportType) }
        guard key.keyData.count == 16 else { return .failure(.keyData) }
        let start = Int64(key.rollingStartIntervalNumber)
        guard start > 0, start % 144 == 0, start <= Int64(now.timeIntervalSince1970) / 600 else {
            return .failure(.rollingStart)
        }
        guard (1...144).contains(key.rollingPeriod) else { return .failure(.rollingPeriod) }
        // The incoming TRL is ignored: it is derived from DSOS with the map submission uses (cwa-server §5.6).
        let dsos = Int(key.daysSinceOnsetOfSymptoms)
        guard (-15...4000).contains(dsos) else { return .failure(.daysSinceOnset) }
        guard CountryCode.isValid(key.origin), key.origin != self.ownCountry else { return .failure(.origin) }
        guard key.visitedCountries.allSatisfy(CountryCode.isValid) else { return .failure(.visitedCountries) }
        var visited = key.visitedCountries
        if !visited.contains(key.origin) { visited.append(key.origin) }
        return .success(
            FederatedKey(
                row: DiagnosisKeyRow(
                    keyData: Array(key.keyData),
                    rollingStartIntervalNumber: Int32(start),
                    rollingPeriod: Int32(key.rollingPeriod),
                    transmissionRiskLevel: Int32(self.derivations.trl(forDSOS: dsos, defaultTRL: self.defaultTRL)),
                    daysSinceOnsetOfSymptoms: Int32(dsos),
                    // Every federated key is stored as a confirmed test, whichever accepted type it came with, as
                    // the reference stores downloaded keys.
                    reportType: Self.storedReportType
                ),
                originCountry: key.origin,
                visitedCountries: visited
            )
        )
    }

    static let storedReportType = ReportType.confirmedTest.storageName ?? "CONFIRMED_TEST"

    /// Why a key is not stored; the raw values are the metric labels.
    enum Refusal: String, Error, CaseIterable {
        case reportType = "report_type"
        case keyData = "key_data"
        case rollingStart = "rolling_start"
        case rollingPeriod = "rolling_period"
        case daysSinceOnset = "dsos"
        case origin
        case visitedCountries = "visited_countries"
        /// Its upload batch's signature did not verify, or it claimed another origin than its signer's.
        case signature
    }
}
