// verification-service's internal teleTAN endpoint over HTTP, called with the portal's own short-lived token.

import ENCrypto
import ENServiceKit
import Foundation
import Logging
import NIOCore
import ServiceLifecycle

/// `POST /version/v1/tan/teletan` with `Authorization: Bearer` and `X-CWA-TELETAN-TYPE`. Creating a teleTAN changes
/// state, so only attempts that never reached verification-service are repeated.
struct HTTPTeleTANClient: TeleTANClient, Service {
    let baseURL: String
    let upstream: UpstreamClient

    /// - Parameter baseURL: `VERIFICATION_INTERNAL_URL`, e.g. `http://127.0.0.1:8012`.
    init(baseURL: String, policy: UpstreamPolicy, serviceToken: ServiceTokenSigner, logger: Logger) {
        self.baseURL = baseURL
        self.upstream = UpstreamClient(
            peer: "verification-service",
            policy: policy,
            serviceToken: serviceToken,
            logger: logger
        )
    }

    func run() async throws {
        try await self.upstream.run()
    }

    func shutdown() async throws {
        try await self.upstream.shutdown()
    }

    func createTeleTAN(kind: TeleTANKind, bearer: String) async throws(UpstreamUnavailable) -> TeleTANAnswer {
        let response = try await self.upstream.postJSON(
            self.baseURL.trimmingSuffix("/") + "/version/v1/tan/teletan",
            "{}",
            headers: [("Authorization", "Bearer \(bearer)"), ("X-CWA-TELETAN-TYPE", kind.rawValue)],
            retries: .unsentOnly
        )
        switch response.status {
        case 201:
            struct Body: Decodable { var value: String }
            guard let body = try? JSONDecoder().decode(Body.self, from: Data(response.body.readableBytesView)) else {
                throw UpstreamUnavailable("verification-service answered 201 without a teleTAN")
            }
            return .created(body.value)
        case 429: return .rateLimited
        default: return .refused(response.status)
        }
    }
}
