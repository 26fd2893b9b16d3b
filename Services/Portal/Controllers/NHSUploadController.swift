// The NHS local-risk uploads (nhs §5, §6): an external system posts the whole list of risky venues (CSV) or of
// risky post districts (JSON) with its API key; the list is checked whole and published signed at once, or nothing
// changes.

import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import Logging

/// Checks an upload whole and has distribution-service publish it, signed, at once. Used by the API uploads and by a
/// venue officer's confirmation alike.
struct NHSLocalRisk: Sendable {
    let lists: any NHSListClient
    let clock: WallClock

    enum List: String, Sendable {
        case venues = "risky-venues"
        case postDistricts = "risky-post-districts"

        /// The audit action of a publication (`risky_venues_published`).
        var auditAction: String { self.rawValue.replacingOccurrences(of: "-", with: "_") + "_published" }
    }

    enum Outcome: Sendable, Equatable {
        /// Published; what the audit line records (`venues=3`).
        case published(String)
        /// The upload is not a list (the message after `validation error: `); nothing was published.
        case invalid(String)
        /// distribution-service could not be asked or refused; the published list is unchanged.
        case unavailable
    }

    func publish(_ list: List, _ bytes: [UInt8], contentType: String?, logger: Logger) async -> Outcome {
        do {
            switch list {
            case .venues:
                switch NHSRiskyVenueCSV.parse(bytes, contentType: contentType, now: self.clock.now) {
                case .failure(let problem): return .invalid(problem.message)
                case .success(let venues):
                    let answer = try await self.lists.publishRiskyVenues(NHSRiskyVenueList.json(venues))
                    return self.outcome(answer, details: "venues=\(venues.count)", logger: logger)
                }
            case .postDistricts:
                // What needs no tier metadata first, so a bad upload is 422 also while distribution-service is away;
                // its tiers then check the decoded entries.
                let entries: [NHSRiskyPostDistricts.Entry]
                switch NHSRiskyPostDistricts.decode(bytes) {
                case .failure(let problem): return .invalid(problem.message)
                case .success(let decoded): entries = decoded
                }
                if let problem = entries.lazy.compactMap(\.problem).first { return .invalid(problem) }
                let tiers = try await self.lists.tiers()
                switch NHSRiskyPostDistricts.upload(NHSRiskyPostDistricts.checking(entries, against: tiers)) {
                case .failure(let problem): return .invalid(problem.message)
                case .success(let upload):
                    let answer = try await self.lists.publishRiskyPostDistricts(upload.json)
                    return self.outcome(
                        answer,
                        details: "postDistricts=\(upload.postDistricts.count) "
                            + "localAuthorities=\(upload.localAuthorities.count)",
                        logger: logger
                    )
                }
            }
        } catch {
            return .unavailable
        }
    }

    private func outcome(_ answer: NHSListAnswer, details: String, logger: Logger) -> Outcome {
        guard answer == .published else {
            logger.error("distribution-service refused a checked NHS list")
            return .unavailable
        }
        return .published(details)
    }
}

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
        let body = try await request.body.collect(upTo: NHSRiskyVenueCSV.maxBytes + 1)
        switch await self.localRisk.publish(
            list,
            Array(body.readableBytesView),
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
}
