// The NHS lists that change between runs (nhs.md §5): portal-service hands over a confirmed list of risky venues
// on the internal port, and it is signed and published at once, not at the next hourly run.

import ENCrypto
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics

/// `POST /version/v1/nhs/risky-venues` on the internal port (caller `portal-service`, service token): the list as
/// phones get it, checked again (a bad list is 422 and the published one stays), signed and written to
/// `distribution/risky-venues` before the answer (204).
struct NHSListPublisher: Sendable {
    let store: any ObjectStore
    let signer: NHSSigner
    let clock: WallClock
    let metrics: any MetricsFactory

    static let routes = ServiceRoutes(["portal-service": ["POST /version/v1/nhs/risky-venues"]])

    func addRoutes(to group: RouterGroup<some RequestContext>) {
        group.post("nhs/risky-venues") { request, context in try await self.riskyVenues(request, context: context) }
    }

    func riskyVenues(_ request: Request, context: some RequestContext) async throws -> Response {
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        let venues: [NHSRiskyVenue]
        do {
            venues = try Self.venues(Data(body.readableBytesView))
        } catch {
            self.count("risky-venues", "invalid")
            throw HTTPError(.unprocessableContent, message: error.message)
        }
        let bytes = NHSRiskyVenueList.json(venues)
        let headers = try self.signer.signFile(bytes, at: self.clock.now)
        let signature = CDNObject.Signature(value: headers.signature, date: headers.date)
        do {
            try await self.store.put(
                CDNObject(
                    key: "distribution/risky-venues",
                    body: bytes,
                    contentType: .json,
                    isDirectoryIndex: false,
                    checksum: CDNObject.signedChecksum(bytes, keyID: signature.keyID),
                    signature: signature
                )
            )
        } catch {
            self.count("risky-venues", "store_failed")
            context.logger.error("Risky venues not published: the object store failed")
            throw HTTPError(.serviceUnavailable, message: "the object store failed; the published list is unchanged")
        }
        self.count("risky-venues", "published")
        context.logger.notice("Risky venues published", metadata: ["venues": "\(venues.count)"])
        return Response(status: .noContent)
    }

    /// `{"venues":[{"id","riskyWindow":{"from","until"},"messageType"}]}`, each venue checked as the upload was.
    static func venues(_ data: Data) throws(NHSRiskyVenueCSV.Problem) -> [NHSRiskyVenue] {
        struct Window: Decodable {
            var from: String
            var until: String
        }
        struct Venue: Decodable {
            var id: String
            var riskyWindow: Window
            var messageType: String
        }
        struct List: Decodable { var venues: [Venue] }
        guard let list = try? JSONDecoder().decode(List.self, from: data) else {
            throw NHSRiskyVenueCSV.Problem("not a list of risky venues")
        }
        var seen: Set<String> = []
        var venues: [NHSRiskyVenue] = []
        for venue in list.venues {
            guard NHSRiskyVenue.isValidID(venue.id), seen.insert(venue.id).inserted,
                let from = NHSRiskyVenueCSV.instant(venue.riskyWindow.from),
                let until = NHSRiskyVenueCSV.instant(venue.riskyWindow.until), from < until,
                ["M1", "M2"].contains(venue.messageType)
            else { throw NHSRiskyVenueCSV.Problem("venue \(venues.count + 1) is not a valid risky venue") }
            venues.append(NHSRiskyVenue(id: venue.id, from: from, until: until, messageType: venue.messageType))
        }
        return venues
    }

    private func count(_ list: String, _ outcome: String) {
        Counter(
            label: "en_distribution_nhs_lists_total",
            dimensions: [("list", list), ("outcome", outcome)],
            factory: self.metrics
        ).increment()
    }
}
