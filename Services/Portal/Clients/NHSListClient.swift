// What the portal asks distribution-service to publish: the NHS risky venues (nhs.md §5).

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
}

/// `POST /version/v1/nhs/risky-venues` on distribution-service's internal port, with the portal's service token.
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
        // Publishing the same list twice publishes it once more: every failure may be repeated.
        let response = try await self.upstream.postJSON(
            self.baseURL.trimmingSuffix("/") + "/version/v1/nhs/risky-venues",
            String(decoding: json, as: UTF8.self)
        )
        guard response.status != 204 else { return .published }
        return .refused(response.status, String(buffer: response.body).prefix(300).description)
    }
}

/// The publication in memory, for route tests: records every list.
actor InMemoryNHSListClient: NHSListClient {
    private(set) var published: [[UInt8]] = []
    var unavailable = false

    func publishRiskyVenues(_ json: [UInt8]) throws(UpstreamUnavailable) -> NHSListAnswer {
        if self.unavailable { throw UpstreamUnavailable("distribution-service is unavailable") }
        self.published.append(json)
        return .published
    }

    func setUnavailable(_ value: Bool) { self.unavailable = value }
}
