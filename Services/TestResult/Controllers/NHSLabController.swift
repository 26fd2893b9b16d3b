// The NHS test path at test-result-service: lab uploads by CTA token, the token API, and verification-service's
// internal calls (nhs §3.2, §3.5, §3.6).

import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics

/// The lab routes and the internal routes: bodies in, `NHSLabEngine` calls, answers out.
struct NHSLabController: Sendable {
    var engine: NHSLabEngine
    let metrics: any MetricsFactory

    /// The lab API under `/upload/virology-test` (API key `testResultUpload`, not signed): V2 with `testKit`, V1
    /// strict without it (kit `LAB_RESULT`). The source segment (`npex`, `fiorano`, `eng`, `wls`) only names the
    /// sender; it is counted, nothing else.
    func addLabRoutes(to group: RouterGroup<some RequestContext>) {
        for version in [NHSUploadVersion.v1, .v2] {
            let prefix = version == .v2 ? "v2/" : ""
            for source in ["npex", "fiorano"] {
                group.post("\(prefix)\(source)-result") { request, context in
                    try await self.upload(request, context: context, version: version, source: source)
                }
            }
            for source in ["eng", "wls"] {
                group.post("\(prefix)\(source)-result-tokengen") { request, context in
                    try await self.tokenGen(request, context: context, version: version, source: source)
                }
            }
        }
    }

    /// verification-service's calls under `/api/v1/nhs`.
    func addInternalRoutes(to group: RouterGroup<some RequestContext>) {
        group.on(Self.orderRoute) { request, context in try await self.createOrder(request, context: context) }
        group.on(Self.resultRoute) { request, context in try await self.result(request, context: context) }
    }

    /// Routes of the internal port verification-service calls.
    static let orderRoute = InternalRoute(.post, "/api/v1/nhs", "order", callers: ["verification-service"])
    static let resultRoute = InternalRoute(.post, "/api/v1/nhs", "result", callers: ["verification-service"])
    static let internalRoutes = [Self.orderRoute, Self.resultRoute]

    // MARK: - Lab API

    /// POST …/{npex|fiorano}-result → 202 `successfully processed`; 400 when no order has the token, 409 when it has a
    /// result already, 422 for an invalid body.
    func upload(
        _ request: Request,
        context: some RequestContext,
        version: NHSUploadVersion,
        source: String
    ) async throws -> Response {
        let (cta, result) = try await self.labBody(request, context: context, version: version, withToken: true)
        guard let cta else { throw NHSError.validation("ctaToken is required") }
        let outcome = try await self.engine.upload(cta, result: result)
        self.count("upload", source: source, outcome: "\(outcome)")
        switch outcome {
        case .stored:
            return NHSResponse.text(.accepted, "successfully processed")
        case .noOrder:
            throw NHSError(.badRequest, "no test order for this ctaToken")
        case .alreadyAvailable:
            throw NHSError(.conflict, "a result was stored for this ctaToken already")
        }
    }

    /// POST …/{eng|wls}-result-tokengen → 200 `{"ctaToken": …}`: the result stored under a new token, which the
    /// notification service sends to the citizen.
    func tokenGen(
        _ request: Request,
        context: some RequestContext,
        version: NHSUploadVersion,
        source: String
    ) async throws -> Response {
        let (_, result) = try await self.labBody(request, context: context, version: version, withToken: false)
        let token = try await self.engine.issueToken(for: result)
        self.count("tokengen", source: source, outcome: "stored")
        return try NHSResponse.json(.ok, ["ctaToken": token.value])
    }

    /// A lab's body, read and checked (nhs §3.5, §3.6); a body that is no JSON object is 422.
    private func labBody(
        _ request: Request,
        context: some RequestContext,
        version: NHSUploadVersion,
        withToken: Bool
    ) async throws -> (CTAToken?, NHSLabResult) {
        let body = try await NHSJSONObject.read(
            request,
            context: context,
            error: .validation("unable to deserialize payload")
        )
        return try NHSLabUpload.validate(body, version: version, withToken: withToken, now: self.engine.clock.now)
    }

    // MARK: - Internal API

    /// POST /api/v1/nhs/order `{"ctaHashes": [...]}` (the new token's hash under each key of `NHS_CTA_PEPPER_FILE`,
    /// the current key's first) → 201 with a pending result stored under the first, 409 when any of them exists (draw
    /// another token). verification-service hashes the token under the same file, so no CTA token crosses the
    /// internal API in clear.
    func createOrder(_ request: Request, context: some RequestContext) async throws -> Response {
        let created = try await self.engine.order(hashes: try await self.hashes(request, context: context))
        return Response(status: created ? .created : .conflict)
    }

    /// POST /api/v1/nhs/result `{"ctaHashes": [...]}` (the token's hash under each pepper key, or the one an order
    /// stored) → 200 `{"ctaHash", "status", "testEndDate"?, "testResult"?, "testKit"?}`, 404 for an unknown or expired
    /// token.
    func result(_ request: Request, context: some RequestContext) async throws -> Response {
        guard let stored = try await self.engine.result(hashes: try await self.hashes(request, context: context)) else {
            return Response(status: .notFound)
        }
        return try NHSResponse.json(
            .ok,
            NHSResultReport(
                ctaHash: stored.ctaHash,
                status: stored.status.rawValue,
                testEndDate: stored.testEndDate,
                testResult: stored.testResult,
                testKit: stored.testKit
            )
        )
    }

    /// `ctaHashes` of an internal call: 1 to 8 hashes (one per pepper key).
    private func hashes(_ request: Request, context: some RequestContext) async throws -> [String] {
        let body = try await NHSJSONObject.read(request, context: context, error: NHSError(.badRequest, "not JSON"))
        guard let hashes = body.fields["ctaHashes"] as? [String], (1...8).contains(hashes.count),
            hashes.allSatisfy(Self.isHash)
        else { throw NHSError(.badRequest, "ctaHashes: 1 to 8 hashes of 64 lowercase hex digits expected") }
        return hashes
    }

    private static func isHash(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    private func count(_ route: String, source: String, outcome: String) {
        Counter(
            label: "en_testresult_nhs_results_total",
            dimensions: [("route", route), ("source", source), ("outcome", outcome)],
            factory: self.metrics
        ).increment()
    }
}
