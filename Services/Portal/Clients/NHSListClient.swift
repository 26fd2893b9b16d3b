// What the portal asks distribution-service to publish: the NHS risky venues (nhs §5) and risky post districts
// (§6), and the tiers a post-district upload may name.

import ENCrypto
import ENServiceKit
import Foundation
import Logging
import NIOCore
import ServiceLifecycle

/// What distribution-service answered to a list.
enum NHSListAnswer: Sendable, Equatable {
    case published
    /// It refused the list (422, with its reason) or the call (401/403: a configuration fault).
    case refused(Int, String)
}

/// Publishes a checked list at distribution-service, signed, at once.
protocol NHSListClient: Sendable {
    func publishRiskyVenues(_ json: [UInt8]) async throws(UpstreamUnavailable) -> NHSListAnswer
    func publishRiskyPostDistricts(_ json: [UInt8]) async throws(UpstreamUnavailable) -> NHSListAnswer
    /// The tier indicators of the published tier metadata.
    func tiers() async throws(UpstreamUnavailable) -> Set<String>
}

/// `POST /version/v1/nhs/risky-venues`, `POST /version/v1/nhs/risky-post-districts` and `GET /version/v1/nhs/tiers`
/// on distribution-service's internal port, with the portal's service token.
struct HTTPNHSListClient: NHSListClient, Service {
    let baseURL: String
    let upstream: UpstreamClient

    init(baseURL: String, policy: UpstreamPolicy, serviceToken: ServiceTokenSigner, logger: Logger) {
        self.baseURL = baseURL
        self.upstream = UpstreamClient(
            peer: "distribution-service",
            policy: policy,
            serviceToken: serviceToken,
            logger: logger
        )
    }

    func run() async throws { try await self.upstream.run() }

    func shutdown() async throws { try await self.upstream.shutdown() }

    func publishRiskyVenues(_ json: [UInt8]) async throws(UpstreamUnavailable) -> NHSListAnswer {
        try await self.publish(json, list: "risky-venues")
    }

    func publishRiskyPostDistricts(_ json: [UInt8]) async throws(UpstreamUnavailable) -> NHSListAnswer {
        try await self.publish(json, list: "risky-post-districts")
    }

    func tiers() async throws(UpstreamUnavailable) -> Set<String> {
        struct Tiers: Decodable { var tiers: [String] }
        let response = try await self.upstream.get(self.baseURL.trimmingSuffix("/") + "/version/v1/nhs/tiers")
        guard response.status == 200,
            let tiers = try? JSONDecoder().decode(Tiers.self, from: Data(response.body.readableBytesView))
        else { throw UpstreamUnavailable("distribution-service answered \(response.status) to the tiers") }
        return Set(tiers.tiers)
    }

    private func publish(_ json: [UInt8], list: String) async throws(UpstreamUnavailable) -> NHSListAnswer {
        // Publishing the same list twice publishes it once more: every failure may be repeated.
        let response = try await self.upstream.postJSON(
            self.baseURL.trimmingSuffix("/") + "/version/v1/nhs/\(list)",
            String(decoding: json, as: UTF8.self)
        )
        guard response.status != 204 else { return .published }
        return .refused(response.status, String(buffer: response.body).prefix(300).description)
    }
}

/// The publication in memory, for route tests: records every list.
actor InMemoryNHSListClient: NHSListClient {
    private(set) var published: [[UInt8]] = []
    private(set) var publishedPostDistricts: [[UInt8]] = []
    var unavailable = false
    let tierIndicators: Set<String> = ["EN.Tier1", "EN.Tier2", "WA.Tier1"]

    func publishRiskyVenues(_ json: [UInt8]) throws(UpstreamUnavailable) -> NHSListAnswer {
        if self.unavailable { throw UpstreamUnavailable("distribution-service is unavailable") }
        self.published.append(json)
        return .published
    }

    func publishRiskyPostDistricts(_ json: [UInt8]) throws(UpstreamUnavailable) -> NHSListAnswer {
        if self.unavailable { throw UpstreamUnavailable("distribution-service is unavailable") }
        self.publishedPostDistricts.append(json)
        return .published
    }

    func tiers() throws(UpstreamUnavailable) -> Set<String> {
        if self.unavailable { throw UpstreamUnavailable("distribution-service is unavailable") }
        return self.tierIndicators
    }

    func setUnavailable(_ value: Bool) { self.unavailable = value }
}
