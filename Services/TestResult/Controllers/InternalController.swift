// The internal API verification-service polls results with.

import ENCrypto
import ENModels
import ENServiceKit
import Foundation
import Hummingbird

/// Routes of the internal port; never routed by the gateway.
struct InternalController: Sendable {
    /// verification-service's result poll.
    static let result = InternalRoute(.post, "/api/v1", "app/result", callers: ["verification-service"])
    /// Every route of the internal port, the NHS ones included; who may call what (`SERVICE_CALLER_KEYS` names the
    /// callers' keys) is built from them.
    static let table = [Self.result] + NHSLabController.internalRoutes
    static let routes = ServiceRoutes(Self.table)

    let repository: any TestResultRepository
    let clock: WallClock
    let metrics: TestResultMetrics

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.on(Self.result) { request, context in try await self.result(request, context: context) }
    }

    /// POST /api/v1/app/result — the result for a hashed GUID or DOB hash; an unknown id creates a pending PCR row
    /// (cwa-satellites §2.2). PoC-NAT codes are reported as PCR codes (§1.7).
    func result(_ request: Request, context: ServiceRequestContext) async throws -> VerificationResultResponse {
        let body = try await request.decodeJSON(as: ResultLookupRequest.self, context: context)
        let id = try LabUploadValidator.validateLookup(body)
        let stored = try await self.repository.findOrCreatePending(
            key: id.storageKey(for: .pcr),
            kind: .pcr,
            now: self.clock.now
        )
        self.metrics.recordLookup(caller: "verification")
        return VerificationResultResponse(
            testResult: stored.result.codeForVerification,
            sc: Int64(stored.sampleCollectedAt.timeIntervalSince1970.rounded(.down)),
            labId: stored.labID,
            dobProtected: stored.dobProtected ? true : nil
        )
    }
}
