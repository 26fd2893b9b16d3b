// data-donation-service's OTP redemption over HTTP (cwa-server §1.7).

import ENCrypto
import ENServiceKit
import Foundation
import HTTPTypes
import Logging
import NIOCore
import ServiceLifecycle

/// The live OTP client: an `UpstreamClient` with bounded, jittered retries, run as a service of the application.
struct HTTPSelfReportClient: SelfReportClient, Service {
    private let upstream: UpstreamClient
    private let url: String

    /// - Parameter baseURL: `DATA_DONATION_INTERNAL_URL`, e.g. `http://127.0.0.1:8017`.
    init(baseURL: String, policy: UpstreamPolicy, serviceToken: ServiceTokenSigner, logger: Logger) {
        self.upstream = UpstreamClient(
            peer: "data-donation-service",
            policy: policy,
            serviceToken: serviceToken,
            logger: logger
        )
        self.url = baseURL.trimmingSuffix("/") + "/version/v1/srs"
    }

    func run() async throws {
        try await self.upstream.run()
    }

    func shutdown() async throws {
        try await self.upstream.shutdown()
    }

    /// The answer's JSON: `{"otp": …, "state": "valid"|"expired"|"redeemed", "strongClientIntegrityCheck": …}`.
    private struct Answer: Decodable {
        var state: String
        var redeemedBy: String?
    }

    /// The call names the attempt, and data-donation-service answers a repeat of that attempt as its first call, so
    /// a call whose answer was lost is repeated like one that never arrived. Neither the OTP nor the answer is logged.
    ///
    /// A 2xx is valid only with `state` `valid`. The reference also takes a 2xx with an empty body as valid; we
    /// treat a 2xx without a readable state as a broken contract (503), not as a redeemed OTP.
    func redeem(_ otp: String, attempt: UUID) async throws(UpstreamUnavailable) -> OTPVerdict {
        let response = try await self.upstream.postJSON(
            self.url,
            encoding: ["otp": otp, "submission": attempt.lowercasedString]
        )
        switch response.status {
        case 200...299:
            guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body.readableBytesView))
            else {
                throw UpstreamUnavailable("data-donation-service answered \(response.status) without a readable state")
            }
            return answer.state == "valid" ? .valid : .rejected
        case 410: return .spentBy(response.header(Redemption.redeemedByHeader.rawName).flatMap(UUID.init))
        case 400, 404: return .rejected
        default: throw UpstreamUnavailable("data-donation-service answered \(response.status)")
        }
    }

    func redemption(hash: String) async throws(UpstreamUnavailable) -> CredentialRedemption? {
        let response = try await self.upstream.postJSON(self.url + "/redemption", encoding: ["otpHash": hash])
        switch response.status {
        case 200:
            guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body.readableBytesView))
            else { throw UpstreamUnavailable("data-donation-service sent an unreadable answer") }
            return CredentialRedemption(
                redeemed: answer.state == "redeemed",
                redeemedBy: answer.redeemedBy.flatMap(UUID.init)
            )
        case 404: return nil
        default: throw UpstreamUnavailable("data-donation-service answered \(response.status)")
        }
    }
}
