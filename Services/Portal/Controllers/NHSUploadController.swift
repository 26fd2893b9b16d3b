// The NHS local-risk uploads (nhs §5, §6): an external system posts the whole list of risky venues (CSV) or of
// risky post districts (JSON) with its API key; the list is checked whole and published signed at once, or nothing
// changes.

import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import Logging

/// `POST /upload/identified-risk-venues` (API key `highRiskVenuesCodeUpload`) and
/// `POST /upload/high-risk-postal-districts` (API key `highRiskPostCodeUpload`), neither signed: 202
/// `successfully uploaded` once distribution-service has published the list; 422 `validation error: …` for a list
/// that is not one (the published list stays); 503 when distribution-service cannot publish it now.
struct NHSUploadController: Sendable {
    let engine: PortalEngine
    let localRisk: NHSLocalRisk

    func addRoutes(to router: Router<PortalRequestContext>, keys: NHSAPIKeyVerifier) {
        router.group().add(middleware: NHSAPIKeyMiddleware(api: .highRiskVenuesCodeUpload, verifier: keys))
            .post("upload/identified-risk-venues") { request, context in
                try await self.upload(.venues, request, context: context)
            }
        router.group().add(middleware: NHSAPIKeyMiddleware(api: .highRiskPostCodeUpload, verifier: keys))
            .post("upload/high-risk-postal-districts") { request, context in
                try await self.upload(.postDistricts, request, context: context)
            }
    }

    func upload(_ list: NHSLocalRisk.List, _ request: Request, context: PortalRequestContext) async throws -> Response {
        switch await self.localRisk.publish(
            list,
            try await Self.head(of: request.body, bytes: NHSRiskyVenueCSV.maxBytes + 1),
            contentType: request.headers[.contentType],
            logger: context.logger
        ) {
        case .invalid(let message):
            return NHSResponse.text(.unprocessableContent, "validation error: \(message)")
        case .unavailable:
            return NHSResponse.text(
                .serviceUnavailable,
                "the list cannot be published now; the published list is unchanged"
            )
        case .published(let details):
            try await self.engine.audit("nhs-api", list.auditAction, "\(details) source=api")
            return NHSResponse.text(.accepted, "successfully uploaded")
        }
    }

    /// The body's first `bytes` bytes; the rest is read and dropped (the router's body limit bounds it). A list one
    /// byte over its limit is so answered in the contract's words (422 `… more than 1MB`), not with a 413.
    static func head(of body: RequestBody, bytes limit: Int) async throws -> [UInt8] {
        var head: [UInt8] = []
        for try await buffer in body where head.count < limit {
            head.append(contentsOf: buffer.readableBytesView.prefix(limit - head.count))
        }
        return head
    }
}
