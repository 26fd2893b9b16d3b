// The NHS risky venues' upload (nhs.md §5): an external system posts the whole list as CSV with its API key; the
// list is checked whole and published signed at once, or nothing changes.

import ENServiceKit
import Foundation
import Hummingbird
import Logging

/// `POST /upload/identified-risk-venues` (API key `highRiskVenuesCodeUpload`, not signed): 202 `successfully
/// uploaded` once distribution-service has published the list; 422 `validation error: …` for a list that is not one
/// (the published list stays); 503 when distribution-service cannot publish it now.
struct NHSUploadController: Sendable {
    let engine: PortalEngine
    let lists: any NHSListClient

    func addRoutes(to group: RouterGroup<PortalRequestContext>) {
        group.post("upload/identified-risk-venues") { request, context in
            try await self.riskyVenues(request, context: context)
        }
    }

    func riskyVenues(_ request: Request, context: PortalRequestContext) async throws -> Response {
        let body = try await request.body.collect(upTo: NHSRiskyVenueCSV.maxBytes + 1)
        let venues: [NHSRiskyVenue]
        switch NHSRiskyVenueCSV.parse(
            Array(body.readableBytesView),
            contentType: request.headers[.contentType],
            now: self.engine.clock.now
        ) {
        case .failure(let problem):
            return NHSResponse.text(.unprocessableContent, "validation error: \(problem.message)")
        case .success(let list): venues = list
        }
        let answer: NHSListAnswer
        do {
            answer = try await self.lists.publishRiskyVenues(NHSRiskyVenueList.json(venues))
        } catch {
            return NHSResponse.text(
                .serviceUnavailable,
                "the list cannot be published now; the published list is unchanged"
            )
        }
        guard answer == .published else {
            context.logger.error("distribution-service refused a checked list of risky venues")
            return NHSResponse.text(
                .serviceUnavailable,
                "the list cannot be published now; the published list is unchanged"
            )
        }
        try await self.engine.audit("nhs-api", "risky_venues_published", "venues=\(venues.count) source=api")
        return NHSResponse.text(.accepted, "successfully uploaded")
    }
}
