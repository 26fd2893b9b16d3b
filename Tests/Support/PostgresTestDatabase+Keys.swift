// Keys for fixtures, written as submission-service writes them.

package import ENKeyStore
import Foundation

extension PostgresTestDatabase {
    /// Writes `submission` through the key store's own insertion (hold, a credential that is granted, complete): the
    /// one way fixtures put rows into `diagnosis_key`, so they follow the rules a submission does. Returns how many
    /// keys were stored.
    @discardableResult
    package func storeKeys(_ submission: KeySubmission) async throws -> Int {
        try await PostgresDiagnosisKeyRepository(client: self.client, logger: self.logger).storeGranted(submission).keys
    }
}

extension DiagnosisKeyRepository {
    /// Stores `submission` as one attempt whose credential is granted.
    @discardableResult
    package func storeGranted(_ submission: KeySubmission) async throws -> KeySubmissionOutcome {
        try await self.store(submission) { (_: UUID) async throws(Never) in }
    }
}

extension KeySubmission {
    /// A PCR submission from DE in `hour` (hours since the epoch) of `keys` (16 bytes each), each a confirmed test
    /// valid for a whole day from `rollingStart` (ten-minute intervals since the epoch).
    package static func pcr(
        _ keys: [[UInt8]],
        hour: Int64,
        rollingStart: Int32,
        trl: Int32 = 6,
        daysSinceOnset: Int32 = 1,
        visited: [String] = ["DE"],
        consent: Bool = false
    ) -> KeySubmission {
        KeySubmission(
            submissionType: "SUBMISSION_TYPE_PCR_TEST",
            originCountry: "DE",
            visitedCountries: visited,
            consentToFederation: consent,
            submissionHour: hour,
            keys: keys.map {
                DiagnosisKeyRow(
                    keyData: $0,
                    rollingStartIntervalNumber: rollingStart,
                    rollingPeriod: 144,
                    transmissionRiskLevel: trl,
                    daysSinceOnsetOfSymptoms: daysSinceOnset,
                    reportType: "CONFIRMED_TEST"
                )
            }
        )
    }
}
