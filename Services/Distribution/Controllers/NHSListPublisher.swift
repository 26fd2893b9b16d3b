// The NHS lists that change between runs (nhs §5, §6): portal-service hands over a confirmed list of risky venues
// or of risky post districts on the internal port, and it is signed and published at once, not at the next hourly run.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore

/// The internal port's NHS routes (caller `portal-service`, service token). Each list is checked again (a bad list is
/// 422 and the published one stays), signed and written before the answer (204):
/// - `POST /version/v1/nhs/risky-venues`: the venues as phones get them → `distribution/risky-venues`;
/// - `POST /version/v1/nhs/risky-post-districts`: the upload's JSON → `distribution/risky-post-districts` (v1) and
///   `distribution/risky-post-districts-v2` (with the whole tier metadata), in that order;
/// - `GET /version/v1/nhs/tiers`: `{"tiers":[…]}`, the tier indicators an upload may name (the keys of the published
///   tier metadata), for the portal's preview.
struct NHSListPublisher: Sendable {
    let store: any ObjectStore
    let signer: NHSSigner
    let clock: WallClock
    let metrics: any MetricsFactory
    /// The tier metadata document as distribution-service publishes it (`distribution/tier-metadata`).
    let tierMetadata: [UInt8]
    /// Its keys: the tier indicators an upload may name.
    let tiers: Set<String>
    /// One post districts' publication at a time in this process.
    let gate = PublicationGate()

    init(
        store: any ObjectStore,
        signer: NHSSigner,
        clock: WallClock,
        metrics: any MetricsFactory,
        tierMetadata: [UInt8]
    ) {
        self.store = store
        self.signer = signer
        self.clock = clock
        self.metrics = metrics
        self.tierMetadata = tierMetadata
        self.tiers = NHSRiskyPostDistricts.tiers(ofMetadata: tierMetadata)
    }

    /// The portal's hand-overs of the risky venues and post districts, and its question for the tiers.
    static let riskyVenuesRoute = InternalRoute(.post, "/version/v1", "nhs/risky-venues", callers: ["portal-service"])
    static let riskyPostDistrictsRoute = InternalRoute(
        .post,
        "/version/v1",
        "nhs/risky-post-districts",
        callers: ["portal-service"]
    )
    static let tiersRoute = InternalRoute(.get, "/version/v1", "nhs/tiers", callers: ["portal-service"])
    static let table = [Self.riskyVenuesRoute, Self.riskyPostDistrictsRoute, Self.tiersRoute]
    static let routes = ServiceRoutes(Self.table)

    func addRoutes(to group: RouterGroup<some RequestContext>) {
        group.on(Self.riskyVenuesRoute) { request, context in try await self.riskyVenues(request, context: context) }
        group.on(Self.riskyPostDistrictsRoute) { request, context in
            try await self.riskyPostDistricts(request, context: context)
        }
        group.on(Self.tiersRoute) { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(["tiers": self.tiers.sorted()])))
            )
        }
    }

    func riskyPostDistricts(_ request: Request, context: some RequestContext) async throws -> Response {
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        let upload: NHSRiskyPostDistricts
        switch NHSRiskyPostDistricts.parse(Array(body.readableBytesView), tiers: self.tiers) {
        case .failure:
            self.count("risky-post-districts", "invalid")
            // The portal checked the upload against these tiers: the reason (it names a post district) stays out of
            // the answer, which the error middleware logs.
            throw HTTPError(.unprocessableContent, message: "not a valid upload of risky post districts")
        case .success(let checked): upload = checked
        }
        let now = self.clock.now
        // v1 before v2, as the reference writes them, and one upload's pair at a time, so the two never come from
        // different uploads; a failure between the two leaves v2 as it was, and the portal's repeat publishes both.
        try await self.gate.exclusively {
            for (key, bytes) in [
                ("distribution/risky-post-districts", upload.v1),
                ("distribution/risky-post-districts-v2", upload.v2(metadata: self.tierMetadata)),
            ] {
                guard try await self.publish(key: key, bytes: bytes, at: now, context: context) else {
                    self.count("risky-post-districts", "store_failed")
                    throw HTTPError(.serviceUnavailable, message: "the object store failed; publish the list again")
                }
            }
        }
        self.count("risky-post-districts", "published")
        context.logger.notice(
            "Risky post districts published",
            metadata: [
                "postDistricts": "\(upload.postDistricts.count)",
                "localAuthorities": "\(upload.localAuthorities.count)",
            ]
        )
        return Response(status: .noContent)
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
        guard
            try await self.publish(key: "distribution/risky-venues", bytes: bytes, at: self.clock.now, context: context)
        else {
            self.count("risky-venues", "store_failed")
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

    /// Signs `bytes` (`date:` ‖ bytes) and writes them under `key`; `false` when the object store failed.
    private func publish(key: String, bytes: [UInt8], at date: Date, context: some RequestContext) async throws -> Bool
    {
        let object = try CDNObject.signedJSON(key: key, body: bytes, signer: self.signer, at: date)
        do {
            try await self.store.put(object)
            return true
        } catch {
            context.logger.error("An NHS list was not published: the object store failed", metadata: ["key": "\(key)"])
            return false
        }
    }

    private func count(_ list: String, _ outcome: String) {
        Counter(
            label: "en_distribution_nhs_lists_total",
            dimensions: [("list", list), ("outcome", outcome)],
            factory: self.metrics
        ).increment()
    }
}
