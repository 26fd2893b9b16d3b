// The NHS local-risk lists (nhs §5, §6): a list of risky venues or of risky post districts, checked whole and
// published signed by distribution-service at once, or nothing changes.

import ENNHS
import ENServiceKit
import Foundation
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
