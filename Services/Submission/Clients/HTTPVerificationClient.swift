// verification-service's TAN verification over HTTP (cwa-server §1.7).

import ENCrypto
import ENServiceKit
import Foundation
import Logging
import NIOCore
import ServiceLifecycle

/// The live verifier: an `UpstreamClient` with bounded, jittered retries, run as a service of the application.
struct HTTPVerificationClient: VerificationClient, Service {
    private let upstream: UpstreamClient
    private let url: String

    /// - Parameter baseURL: `VERIFICATION_INTERNAL_URL`, e.g. `http://127.0.0.1:8012`.
    init(baseURL: String, policy: UpstreamPolicy, serviceToken: ServiceTokenSigner, logger: Logger) {
        self.upstream = UpstreamClient(
            peer: "verification-service",
            policy: policy,
            serviceToken: serviceToken,
            logger: logger
        )
        self.url = baseURL.trimmingSuffix("/") + "/version/v1/tan/verify"
        self.nhsURL = baseURL.trimmingSuffix("/") + "/version/v1/nhs/submission-token/verify"
    }

    private let nhsURL: String

    /// Like a TAN, the token is used up by the call: only attempts that never reached verification-service repeat.
    func verifyNHSSubmissionToken(_ token: String) async throws(UpstreamUnavailable) -> NHSTestKit? {
        let body = #"{"diagnosisKeySubmissionToken":"\#(token)"}"#
        let response = try await self.upstream.postJSON(self.nhsURL, body, retries: .unsentOnly)
        switch response.status {
        case 200:
            struct Answer: Decodable { var testKit: NHSTestKit }
            guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body.readableBytesView))
            else { throw UpstreamUnavailable("verification-service sent an unreadable answer") }
            return answer.testKit
        case 400, 404: return nil
        default: throw UpstreamUnavailable("verification-service answered \(response.status)")
        }
    }

    func run() async throws {
        try await self.upstream.run()
    }

    func shutdown() async throws {
        try await self.upstream.shutdown()
    }

    /// Verifying uses the TAN up, so only attempts that never reached verification-service are repeated: a
    /// repeat after a lost answer would find the TAN used and turn a valid submission into a 403. The kind travels in
    /// `event`, so verification-service consumes only a TAN of the kind the endpoint accepts.
    func verify(_ tan: String, event: Bool) async throws(UpstreamUnavailable) -> TANVerdict {
        let body = #"{"tan":"\#(tan)","event":\#(event)}"#
        let response = try await self.upstream.postJSON(self.url, body, retries: .unsentOnly)
        switch response.status {
        case 200...299: return .valid(teleTANType: response.header("X-CWA-TELETAN-TYPE"))
        case 409: return .wrongKind
        case 400, 404: return .rejected
        default: throw UpstreamUnavailable("verification-service answered \(response.status)")
        }
    }
}
