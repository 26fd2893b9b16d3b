// Checking a downloaded batch against the signatures of the upload batches it holds (cwa-satellites §5.4, §5.6).

import ENFederation
import ENModels
import Foundation
import X509

/// Splits a download batch into its upload batches by the gateway's audit entries and checks each one's signature
/// against the trust anchors: the signer must speak for the entry's country (its certificate's `C`) and be, or chain
/// to, an anchor registered for that country, and every key of the group must claim that country as origin. Keys of a
/// group that fails are refused, others pass.
///
/// The gateway leaves the caller's own keys out of a download, so entries of the caller's country are skipped.
struct BatchVerification: Sendable {
    let verifier: BatchSignatureVerifier
    let ownCountry: String

    /// The result per key, in the batch's order: `true` for keys whose upload batch verified.
    func verify(
        _ keys: [FederationDiagnosisKey],
        entries: [AuditEntry],
        at time: Date
    ) async -> Result<[Bool], VerificationFailure> {
        let foreign = entries.filter { $0.country != self.ownCountry }
        guard foreign.allSatisfy({ $0.amount > 0 }), foreign.reduce(0, { $0 + $1.amount }) == keys.count else {
            return .failure(.auditDoesNotCoverBatch)
        }
        var verdicts: [Bool] = []
        verdicts.reserveCapacity(keys.count)
        var start = 0
        for entry in foreign {
            let group = Array(keys[start..<(start + entry.amount)])
            start += entry.amount
            let valid = await self.verifyGroup(group, entry: entry, at: time)
            verdicts.append(contentsOf: repeatElement(valid, count: group.count))
        }
        return .success(verdicts)
    }

    private func verifyGroup(_ group: [FederationDiagnosisKey], entry: AuditEntry, at time: Date) async -> Bool {
        guard group.allSatisfy({ $0.origin == entry.country }) else { return false }
        let result = await self.verifier.verify(
            signature: entry.batchSignature,
            batchBytes: BatchSignatureBytes.batch(of: group),
            country: entry.country,
            at: time
        )
        guard case .success = result else { return false }
        return true
    }

    enum VerificationFailure: Error, Equatable {
        /// The audit's key counts do not add up to the batch.
        case auditDoesNotCoverBatch
    }
}
