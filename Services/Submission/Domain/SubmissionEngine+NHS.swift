// The NHS key submission's flow (nhs §4): keys held, the submission token spent, then the keys stored with the
// report type of the token's test kit.

import ENKeyStore
import ENModels
import ENNHS
import Foundation
import Logging

extension SubmissionEngine {
    /// Holds the payload's keys, spends its submission token for the attempt, then stores them with the report type of
    /// the token's test kit (`submitHeld`). `false` when verification-service refused the token: nothing is stored.
    func submitNHS(_ payload: NHSKeyPayload, now: Date) async throws(SubmissionFailure) -> Bool {
        let origin = self.policy.originCountry
        var random = SystemRandomNumberGenerator()
        // The draft carries the rows of a lab result; the token's kit sets the types when it is spent (`SpendGrant`).
        let draft = KeySubmission(
            submissionType: NHSKeyPayload.submissionType(.labResult).storageName,
            originCountry: origin,
            visitedCountries: [origin],
            consentToFederation: false,
            submissionHour: EpochIntervals.hour(now),
            keys: PreparedSubmission.padded(
                payload.rows(kit: .labResult),
                multiplier: self.policy.keyPaddingMultiplier,
                using: &random
            ),
            fromNHSApp: true
        )
        do {
            let outcome = try await self.submitHeld(
                draft,
                credential: .nhsToken(payload.token),
                endpoint: .diagnosisKeys
            )
            self.logger.debug("NHS submission stored", metadata: ["submission.keys.stored": "\(outcome.keys)"])
            return true
        } catch {
            switch error {
            case .tanRejected: return false
            default: throw error
            }
        }
    }
}
