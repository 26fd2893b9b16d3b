// The internal API: OTP redemption by the services that accept them (cwa-satellites §4.1: edus, els-verify,
// srs-verify).

import ENCrypto
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
    static let survey = InternalRoute(.post, "/version/v1", "otp", callers: ["survey-service"])
    static let errorLog = InternalRoute(.post, "/version/v1", "els", callers: ["error-log-service"])
    static let selfReport = InternalRoute(.post, "/version/v1", "srs", callers: ["submission-service"])
    static let selfReportRedemption = InternalRoute(
        .post,
        "/version/v1",
        "srs/redemption",
        callers: ["submission-service"]
    )
    static let table = [Self.survey, Self.errorLog, Self.selfReport, Self.selfReportRedemption]
    static let routes = ServiceRoutes(Self.table)

    let repository: any DonationRepository
    let clock: WallClock
    let metrics: DataDonationMetrics

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.on(Self.survey) { request, context in try await self.redeem(.survey, request, context) }
        group.on(Self.errorLog) { request, context in try await self.redeem(.errorLog, request, context) }
        group.on(Self.selfReport) { request, context in try await self.redeem(.selfReport, request, context) }
        group.on(Self.selfReportRedemption) { request, context in try await self.redemption(request, context) }
    }

    struct Body: Decodable {
        var otp: String
        /// The submission attempt that redeems the OTP (a UUID), recorded with it.
        var submission: String?
    }

    struct HashBody: Decodable {
        var otpHash: String
    }

    struct RedemptionAnswer: Encodable {
        var state: OTPState
        var redeemedBy: String?
    }

    struct Answer: Encodable {
        var otp: String
        var state: OTPState
        var strongClientIntegrityCheck: Bool
    }

    /// 200 `{"otp", "state": "valid", "strongClientIntegrityCheck"}` for the one call that redeemed it, and for a
    /// repeat by the submission attempt named in `submission` that did. A known OTP that is `expired` or `redeemed`
    /// gets 400 with that state (survey, error log) or 200 with it (self-report, as the reference's srs-verify); to a
    /// caller that names an attempt, a self-report OTP another attempt redeemed is 410 with `X-Redeemed-By`. An unknown
    /// OTP is 404; an OTP that is not a version 3 or 4 UUID, or a `submission` that is no UUID, 400.
    func redeem(_ kind: OTPKind, _ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: Body.self, context: context)
        guard let otp = OTP(body.otp, strict: true) else {
            throw APIError(.badRequest, "otp: expected a version 3 or 4 UUID")
        }
        var submission: UUID?
        if let text = body.submission {
            guard let id = UUID(uuidString: text) else { throw APIError(.badRequest, "submission: expected a UUID") }
            submission = id
        }
        let redemption: OTPRedemption?
        do {
            redemption = try await self.repository.redeem(
                otp.hash,
                kind: kind,
                now: self.clock.now,
                submission: submission
            )
        } catch {
            throw DonationFailure.storageUnavailable
        }
        guard let redemption else {
            self.metrics.recordRedemption(kind: kind, state: "unknown")
            throw APIError(.notFound, "unknown OTP")
        }
        self.metrics.recordRedemption(kind: kind, state: redemption.state.rawValue)
        var status: HTTPResponse.Status = redemption.state == .valid || kind == .selfReport ? .ok : .badRequest
        var headers: HTTPFields = [.contentType: "application/json"]
        if kind == .selfReport, submission != nil, redemption.state == .redeemed {
            status = .gone
            if let by = redemption.redeemedBy { headers[Redemption.redeemedByHeader] = by.uuidString.lowercased() }
        }
        let json = try JSONEncoder().encode(
            Answer(
                otp: otp.value,
                state: redemption.state,
                strongClientIntegrityCheck: redemption.strongClientIntegrityCheck
            )
        )
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }

    /// POST /version/v1/srs/redemption `{"otpHash"}` → 200 `{"state", "redeemedBy"?}`: whether, and by which
    /// submission attempt, the self-report OTP with that SHA-256 (lower-case hex) was redeemed; 404 when unknown.
    func redemption(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: HashBody.self, context: context)
        guard SecretHash.isSHA256Hex(body.otpHash) else {
            throw APIError(.badRequest, "otpHash: expected the lower-case hex SHA-256 of an OTP")
        }
        let redemption: OTPRedemption?
        do {
            redemption = try await self.repository.redemption(body.otpHash, kind: .selfReport, now: self.clock.now)
        } catch {
            throw DonationFailure.storageUnavailable
        }
        guard let redemption else { throw APIError(.notFound, "unknown OTP") }
        let json = try JSONEncoder().encode(
            RedemptionAnswer(state: redemption.state, redeemedBy: redemption.redeemedBy?.uuidString.lowercased())
        )
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: json))
        )
    }
}
