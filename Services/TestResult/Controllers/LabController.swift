// The lab-facing API: batch uploads of PCR, rapid and PoC-NAT results, and the portals' single lookups.

import ENModels
import ENServiceKit
import Hummingbird
import Logging

/// Routes of the main port (cwa-satellites §2.1). Labs authenticate with client certificates (middleware).
struct LabController: Sendable {
    let repository: any TestResultRepository
    let validator: LabUploadValidator
    let clock: WallClock
    let metrics: TestResultMetrics

    func addRoutes(to group: RouterGroup<CertificateRequestContext>) {
        group.post("lab/results") { request, context in try await self.upload(request, context: context, kind: .pcr) }
        group.post("quicktest/results") { request, context in
            try await self.upload(request, context: context, kind: .rapidAntigen)
        }
        group.post("pocnat/results") { request, context in
            try await self.upload(request, context: context, kind: .pointOfCareNAT)
        }
        group.post("quicktest/result") { request, context in
            try await self.lookup(request, context: context, kind: .rapidAntigen)
        }
        group.post("pocnat/result") { request, context in
            try await self.lookup(request, context: context, kind: .pointOfCareNAT)
        }
    }

    /// POST /api/v1/{lab,quicktest,pocnat}/results — stores a batch; 204. Any invalid entry rejects the batch; so does
    /// an id whose result another lab uploaded (409).
    func upload(
        _ request: Request,
        context: CertificateRequestContext,
        kind: TestKind
    ) async throws -> HTTPResponse.Status {
        let batch = try await request.decodeJSON(as: LabResultBatch.self, context: context)
        let now = self.clock.now
        let uploads = try self.validator.validate(batch, kind: kind, lab: context.identity?.name, now: now)
        let outcome = try await self.repository.store(uploads, now: now)
        self.metrics.recordStore(outcome, kind: kind)
        context.logger.info(
            "Results stored",
            metadata: [
                "results.inserted": "\(outcome.inserted)", "results.updated": "\(outcome.updated)",
                "results.unchanged": "\(outcome.unchanged)",
            ]
        )
        return .noContent
    }

    /// POST /api/v1/{quicktest,pocnat}/result — a portal reads the result of one of its tests, creating a pending
    /// row of its kind for an unknown id. Returns the stored code as it is (5–9 or 10–14 for rows the portal wrote).
    func lookup(
        _ request: Request,
        context: CertificateRequestContext,
        kind: TestKind
    ) async throws -> PortalResultResponse {
        let body = try await request.decodeJSON(as: ResultLookupRequest.self, context: context)
        let id = try LabUploadValidator.validateLookup(body)
        let stored = try await self.repository.findOrCreatePending(
            key: id.storageKey(for: kind),
            kind: kind,
            now: self.clock.now
        )
        self.metrics.recordLookup(caller: "portal")
        return PortalResultResponse(testResult: stored.result.code, labId: stored.labID)
    }
}
