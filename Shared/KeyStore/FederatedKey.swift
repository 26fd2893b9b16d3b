// A key another country published, as federation's download stores it (cwa-server §5.4).

import ENModels

/// A key from the federation gateway, accepted for `diagnosis_key`: stored as a PCR key of the download's hour, without
/// consent (so it is never uploaded again), with its own origin and visited countries.
package struct FederatedKey: Sendable, Equatable {
    package var row: DiagnosisKeyRow
    package var originCountry: String
    package var visitedCountries: [String]

    package init(row: DiagnosisKeyRow, originCountry: String, visitedCountries: [String]) {
        self.row = row
        self.originCountry = originCountry
        self.visitedCountries = visitedCountries
    }

    /// The submission type federated keys are stored with.
    package static let submissionType = SubmissionPayload.SubmissionType.pcrTest.storageName
}
