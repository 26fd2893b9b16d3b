// verification-service's internal teleTAN endpoint, called with the portal's own short-lived token.

import ENServiceKit
import Foundation
import Logging
import NIOCore

/// What verification-service answered.
enum TeleTANAnswer: Sendable, Equatable {
    case created(String)
    /// The global limit of verification-service (429).
    case rateLimited
    /// Refused the token (401/403) or the request: a configuration fault between the two services.
    case refused(Int)
}

protocol TeleTANIssuing: Sendable {
    func createTeleTAN(kind: TeleTANKind, bearer: String) async throws(UpstreamUnavailable) -> TeleTANAnswer
}

/// `POST /version/v1/tan/teletan` with `Authorization: Bearer` and `X-CWA-TELETAN-TYPE`. Creating a teleTAN changes
/// state, so only attempts that never reached verification-service are repeated.
struct TeleTANClient: TeleTANIssuing {
    let baseURL: String
    let upstream: UpstreamClient

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
