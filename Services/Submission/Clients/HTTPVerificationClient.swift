// verification-service's TAN verification over HTTP (cwa-server §1.7).

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import HTTPTypes
import Logging
import NIOCore
import ServiceLifecycle

/// The live verifier: an `UpstreamClient` with bounded, jittered retries, run as a service of the application.
///
/// Every spending call names the submission attempt, and verification-service answers a repeat of that attempt as
/// its first call, so a call whose answer was lost (a read timeout, a 5xx) is repeated like one that never arrived.
struct HTTPVerificationClient: VerificationClient, Service {
    private let upstream: UpstreamClient
    private let base: String

    /// - Parameter baseURL: `VERIFICATION_INTERNAL_URL`, e.g. `http://127.0.0.1:8012`.
    init(baseURL: String, policy: UpstreamPolicy, serviceToken: ServiceTokenSigner, logger: Logger) {
        self.upstream = UpstreamClient(
            peer: "verification-service",
            policy: policy,
            serviceToken: serviceToken,
            logger: logger
        )
        self.base = baseURL.trimmingSuffix("/") + "/version/v1"
    }

    func run() async throws {
        try await self.upstream.run()
    }

    func shutdown() async throws {
        try await self.upstream.shutdown()
    }

    /// The kind travels in `event`, so verification-service consumes only a TAN of the kind the endpoint accepts.
    func verify(_ tan: String, event: Bool, attempt: UUID) async throws(UpstreamUnavailable) -> TANVerdict {
        struct Body: Encodable {
            var tan: String
            var event: Bool
            var submission: String
        }
        let body = Body(tan: tan, event: event, submission: attempt.lowercasedString)
        let response = try await self.upstream.postJSON(self.base + "/tan/verify", encoding: body)
        switch response.status {
        case 200...299: return .valid(teleTANType: response.header("X-CWA-TELETAN-TYPE"))
        case 409: return .wrongKind
        case 410: return .spentBy(response.header(Redemption.redeemedByHeader.rawName).flatMap(UUID.init))
        case 400, 404: return .rejected
        default: throw UpstreamUnavailable("verification-service answered \(response.status)")
        }
    }

    func verifyNHSSubmissionToken(
        _ token: String,
        attempt: UUID
    ) async throws(UpstreamUnavailable) -> NHSTokenVerdict {
        let body = ["diagnosisKeySubmissionToken": token, "submission": attempt.lowercasedString]
        let response = try await self.upstream.postJSON(self.base + "/nhs/submission-token/verify", encoding: body)
        switch response.status {
        case 200:
            struct Answer: Decodable { var testKit: NHSTestKit }
            guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body.readableBytesView))
            else { throw UpstreamUnavailable("verification-service sent an unreadable answer") }
            return .valid(answer.testKit)
        case 410: return .spentBy(response.header(Redemption.redeemedByHeader.rawName).flatMap(UUID.init))
        case 400, 404: return .rejected
        default: throw UpstreamUnavailable("verification-service answered \(response.status)")
        }
    }

    func tanRedemption(hash: String) async throws(UpstreamUnavailable) -> CredentialRedemption? {
        try await self.redemption(self.base + "/tan/redemption", ["tanHash": hash])
    }

    func nhsTokenRedemption(hash: String) async throws(UpstreamUnavailable) -> CredentialRedemption? {
        try await self.redemption(self.base + "/nhs/submission-token/redemption", ["tokenHash": hash])
    }

    private func redemption(
        _ url: String,
        _ body: [String: String]
    ) async throws(UpstreamUnavailable) -> CredentialRedemption? {
        let response = try await self.upstream.postJSON(url, encoding: body)
        switch response.status {
        case 200:
            guard
                let answer = try? JSONDecoder().decode(
                    RedemptionAnswer.self,
                    from: Data(response.body.readableBytesView)
                )
            else { throw UpstreamUnavailable("verification-service sent an unreadable answer") }
            return answer.redemption
        case 404: return nil
        default: throw UpstreamUnavailable("verification-service answered \(response.status)")
        }
    }
}

/// `{"redeemed", "redeemedBy"?, "testKit"?}` of a redemption lookup.
struct RedemptionAnswer: Decodable {
    var redeemed: Bool
    var redeemedBy: String?
    var testKit: NHSTestKit?

    var redemption: CredentialRedemption {
        CredentialRedemption(
            redeemed: self.redeemed,
            redeemedBy: self.redeemedBy.flatMap(UUID.init),
            nhsTestKit: self.testKit
        )
    }
}

extension UUID {
    /// The lower-case text form that the spenders store.
    var lowercasedString: String { self.uuidString.lowercased() }
}
