// A real submission, from payload bytes to stored rows: validate, prepare, verify the TAN, store (cwa-server §1.4).

import ENKeyStore
import ENModels
import ENPersistence
import ENServiceKit
import Foundation
import Logging
import SwiftProtobuf

/// The answer to a stored submission: the check-in counts of §1.3's headers.
struct SubmissionReceipt: Sendable, Equatable {
    var savedCheckIns: Int
    var filteredCheckIns: Int
}

struct SubmissionEngine: Sendable {
    let policy: SubmissionPolicy
    let verifier: any VerificationClient
    let keys: any DiagnosisKeyRepository
    let clock: WallClock
    let metrics: SubmissionMetrics
    let logger: Logger

    /// Validates `body` for `endpoint`, and only when it is valid, verifies (and so uses up) `tan`, then stores
    /// everything in one transaction. A bad payload never burns a TAN; a TAN that fails verification stores
    /// nothing.
    func submit(
        _ endpoint: SubmissionEndpoint,
        body: some DataProtocol,
        tan: String
    ) async throws(SubmissionFailure) -> SubmissionReceipt {
        let payload: SubmissionPayload
        do {
            payload = try SubmissionPayload(serializedBytes: Array(body))
        } catch {
            self.metrics.recordRejected(endpoint, rule: "protobuf")
            throw .unreadablePayload
        }
        let rules = endpoint == .diagnosisKeys ? PayloadRule.diagnosisKeys : PayloadRule.onBehalf
        if let violation = PayloadRule.firstViolation(of: rules, in: payload, policy: self.policy) {
            self.metrics.recordRejected(endpoint, rule: violation.rule)
            self.logger.debug(
                "Submission payload rejected",
                metadata: [
                    "submission.rule": "\(violation.rule)", "submission.payload": "\(PrintablePayload(payload))",
                ]
            )
            throw .invalidPayload(violation)
        }
        guard let tan = TANHeader.parse(tan) else {
            self.metrics.recordInvalidTAN(endpoint)
            throw .malformedTAN
        }
        var random = SystemRandomNumberGenerator()
        let prepared = PreparedSubmission(payload: payload, policy: self.policy, now: self.clock.now, using: &random)

        let outcome: KeySubmissionOutcome
        do {
            outcome = try await self.keys.store(prepared.stored) { () async throws(SubmissionFailure) in
                try await self.authorize(endpoint, tan: tan)
            }
        } catch {
            switch error {
            case .refused(let failure):
                throw failure
            case .database(let cause, let afterAuthorization):
                self.metrics.recordUnavailable(
                    endpoint,
                    dependency: afterAuthorization ? "database_after_tan" : "database"
                )
                self.logger.error("Submission not stored", metadata: ErrorMetadata.of(cause))
                throw afterAuthorization ? .storageFailedAfterVerification : .storageUnavailable
            }
        }
        self.metrics.recordStored(outcome, dropped: prepared.droppedKeys, filtered: prepared.filteredCheckIns)
        if endpoint == .onBehalf { self.metrics.recordOnBehalf() }
        self.logger.debug(
            "Submission stored",
            metadata: [
                "submission.payload": "\(PrintablePayload(payload))", "submission.keys.stored": "\(outcome.keys)",
                "submission.keys.dropped": "\(prepared.droppedKeys)",
            ]
        )
        let saved = outcome.checkInsStored ? outcome.protectedReports + prepared.realTraceWarnings : 0
        return SubmissionReceipt(savedCheckIns: saved, filteredCheckIns: prepared.filteredCheckIns)
    }
}

extension SubmissionEngine {
    /// Verifies (and so uses up) `tan`, and checks that its kind fits `endpoint`: an event teleTAN's TAN is for
    /// submissions on behalf only, and those need one.
    func authorize(_ endpoint: SubmissionEndpoint, tan: String) async throws(SubmissionFailure) {
        let verdict: TANVerdict
        do {
            // Verification-service consumes only a TAN of the kind the endpoint takes; the check below also holds
            // against one that ignores the request's `event` (the reference's).
            verdict = try await self.verifier.verify(tan, event: endpoint == .onBehalf)
        } catch {
            self.metrics.recordUnavailable(endpoint, dependency: "verification")
            throw .verificationUnavailable
        }
        let failure: SubmissionFailure? =
            switch (endpoint, verdict) {
            case (_, .rejected): .tanRejected
            case (.diagnosisKeys, .wrongKind): .eventTANNotAllowed
            case (.onBehalf, .wrongKind): .eventTANRequired
            case (.diagnosisKeys, _) where verdict.isEventTAN: .eventTANNotAllowed
            case (.onBehalf, _) where !verdict.isEventTAN: .eventTANRequired
            default: nil
            }
        if let failure {
            self.metrics.recordInvalidTAN(endpoint)
            throw failure
        }
    }
}

/// What may be logged of a payload (cwa-server §1.12): counts and enum values, never key data, location ids or
/// padding bytes.
struct PrintablePayload: CustomStringConvertible {
    let payload: SubmissionPayload

    init(_ payload: SubmissionPayload) {
        self.payload = payload
    }

    /// The origin when it is a country code; anything else a client sent is not echoed into the log.
    private var origin: String {
        if self.payload.origin.isEmpty { return "-" }
        return CountryCode.isValid(self.payload.origin) ? self.payload.origin : "invalid"
    }

    var description: String {
        let keys = self.payload.keys.map { key in
            let trl = key.hasTransmissionRiskLevel ? "\(key.transmissionRiskLevel)" : "-"
            let dsos = key.hasDaysSinceOnsetOfSymptoms ? "\(key.daysSinceOnsetOfSymptoms)" : "-"
            return
                "{data: HIDDEN, trl: \(trl), rsin: \(key.rollingStartIntervalNumber), period: \(key.rollingPeriod), type: \(key.reportType.storageName ?? "?"), dsos: \(dsos)}"
        }
        return "type: \(self.payload.submissionType.storageName), origin: \(self.origin), "
            + "visited: \(self.payload.visitedCountries.count), consent: \(self.payload.consentToFederation), "
            + "padding: \(self.payload.requestPadding.count) bytes, checkIns: \(self.payload.checkIns.count), "
            + "protectedReports: \(self.payload.checkInProtectedReports.count), keys: [\(keys.joined(separator: ", "))]"
    }
}
