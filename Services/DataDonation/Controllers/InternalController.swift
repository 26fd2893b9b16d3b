// The internal API: OTP redemption by the services that accept them (cwa-satellites §4.1: edus, els-verify,
// srs-verify).

import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Routes of the internal port, under `/version/v1`; the gateway never routes to them.
struct InternalController: Sendable {
    /// Who may redeem what (`SERVICE_CALLER_KEYS` names the callers' keys): submission-service redeems self-report
    /// OTPs; the survey and error-log back ends are not part of this fleet, so their routes are open only to callers
    /// an operator configures under these names.
    static let routes = ServiceRoutes([
        "submission-service": ["POST /version/v1/srs"],
        "survey-service": ["POST /version/v1/otp"],
        "error-log-service": ["POST /version/v1/els"],
    ])

    let repository: any DonationRepository
    let clock: WallClock
    let metrics: DataDonationMetrics

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.post("otp") { request, context in try await self.redeem(.survey, request, context) }
        group.post("els") { request, context in try await self.redeem(.errorLog, request, context) }
        group.post("srs") { request, context in try await self.redeem(.selfReport, request, context) }
    }

    struct Body: Decodable {
        var otp: String
    }

    struct Answer: Encodable {
        var otp: String
        var state: OTPState
        var strongClientIntegrityCheck: Bool
    }

    /// 200 `{"otp", "state": "valid", "strongClientIntegrityCheck"}` for the one call that redeemed it. A known OTP
    /// that is `expired` or `redeemed` gets 400 with that state (survey, error log) or 200 with it (self-report, as
    /// the reference's srs-verify); an unknown one 404; an OTP that is not a version 3 or 4 UUID 400.
    func redeem(_ kind: OTPKind, _ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: Body.self, context: context)
        guard let otp = OTP(body.otp, strict: true) else {
            throw APIError(.badRequest, "otp: expected a version 3 or 4 UUID")
        }
        let redemption: OTPRedemption?
        do {
            redemption = try await self.repository.redeem(otp.hash, kind: kind, now: self.clock.now)
        } catch {
            throw DonationFailure.storageUnavailable
        }
        guard let redemption else {
            self.metrics.recordRedemption(kind: kind, state: "unknown")
            throw APIError(.notFound, "unknown OTP")
        }
        self.metrics.recordRedemption(kind: kind, state: redemption.state.rawValue)
        let status: HTTPResponse.Status = redemption.state == .valid || kind == .selfReport ? .ok : .badRequest
        let json = try JSONEncoder().encode(
            Answer(
                otp: otp.value,
                state: redemption.state,
                strongClientIntegrityCheck: redemption.strongClientIntegrityCheck
            )
        )
        return Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: json))
        )
    }
}
