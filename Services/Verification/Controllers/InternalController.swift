// The internal API: TAN verification for submission, teleTAN creation for the portal, the internal result poll.

import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird

/// Routes of the internal port, under `/version/v1`; the gateway never routes to them.
struct InternalController: Sendable {
    static let teleTANTypeHeader = HTTPField.Name("X-CWA-TELETAN-TYPE")!

    /// The internal routes and who may call each (`SERVICE_CALLER_KEYS` names the callers' keys): submission
    /// verifies TANs, the portal creates teleTANs. The internal result poll is the reference's route for its
    /// certificate service (cwa-satellites, verification internal API); no service of this fleet calls it, so it is
    /// open only to a caller an operator configures as `dcc-server`.
    static let verifyTAN = InternalRoute(.post, "/version/v1", "tan/verify", callers: ["submission-service"])
    static let tanRedemption = InternalRoute(.post, "/version/v1", "tan/redemption", callers: ["submission-service"])
    static let testResult = InternalRoute(.post, "/version/v1", "testresult", callers: ["dcc-server"])
    static let teleTAN = InternalRoute(.post, "/version/v1", "tan/teletan", callers: ["portal-service"])

    /// Every route of the internal port, the NHS ones included; the allowlist is built from them.
    static let table =
        [Self.verifyTAN, Self.tanRedemption, Self.testResult, Self.teleTAN] + NHSVirologyController.internalRoutes
        + NHSCircuitBreakerController.internalRoutes
    static let routes = ServiceRoutes(Self.table)

    let engine: VerificationEngine
    let jwt: JWTVerifier
    let metrics: VerificationMetrics

    typealias Context = InternalRequestContext

    func addRoutes(to group: RouterGroup<Context>) {
        group.on(Self.verifyTAN) { request, context in try await self.verify(request, context: context) }
        group.on(Self.tanRedemption) { request, context in try await self.redemption(request, context: context) }
        group.on(Self.testResult) { request, context in try await self.testResult(request, context: context) }
        group.group()
            .add(
                middleware: BearerTokenMiddleware(verifier: self.jwt, clock: self.engine.clock) { request in
                    let type = request.headers[Self.teleTANTypeHeader].flatMap(TeleTANType.init(rawValue:)) ?? .test
                    self.metrics.recordTeleTAN(type: type, outcome: "unauthorized")
                }
            )
            .on(Self.teleTAN) { request, context in try await self.teleTAN(request, context: context) }
    }

    /// POST /version/v1/tan/verify → 200 with an empty body (plus `X-CWA-TELETAN-TYPE` for teleTAN-derived TANs),
    /// 404 when the TAN is unknown or expired, 409 when it is not of the kind `event` asks for (it then stays usable),
    /// 410 when another submission attempt used it (`X-Redeemed-By`: that attempt; 404 to a caller that names no
    /// attempt, as in the reference). Each TAN verifies once; the attempt named in `submission` that spent it is
    /// answered 200 again when it repeats the call.
    func verify(_ request: Request, context: Context) async throws -> Response {
        let (tan, requirement, submission) = try await request.decodeJSON(as: TANBody.self, context: context)
            .validated()
        let type = try await self.engine.verifyTAN(tan, requiring: requirement, submission: submission)
        var headers = HTTPFields()
        if let type { headers[Self.teleTANTypeHeader] = type.rawValue }
        return Response(status: .ok, headers: headers)
    }

    /// POST /version/v1/tan/redemption `{"tanHash"}` → 200 `{"redeemed", "redeemedBy"}`: whether, and by which
    /// submission attempt, the TAN was used; 404 when no TAN has that hash (unknown, or its record expired).
    func redemption(_ request: Request, context: Context) async throws -> Response {
        let hash = try await request.decodeJSON(as: TANHashBody.self, context: context).validated()
        guard let redemption = try await self.engine.tanRedemption(hash: hash) else {
            throw VerificationFailure.tanNotRedeemable
        }
        let body =
            switch redemption {
            case .unused: RedemptionResponse(redeemed: false, redeemedBy: nil)
            case .redeemed(let by): RedemptionResponse(redeemed: true, redeemedBy: by?.uuidString.lowercased())
            }
        return try PaddedJSON.response(.ok, encoding: body)
    }

    /// POST /version/v1/tan/teletan → 201 `{"value": "<teleTAN>"}`. The caller is authenticated by
    /// `BearerTokenMiddleware`; its roles must permit the type (`X-CWA-TELETAN-TYPE`, default TEST), and the global
    /// rate limit is checked only after that.
    func teleTAN(_ request: Request, context: Context) async throws -> Response {
        let type: TeleTANType
        switch request.headers[Self.teleTANTypeHeader] {
        case nil: type = .test
        case let value?:
            guard let parsed = TeleTANType(rawValue: value) else {
                throw VerificationFailure.invalidRequest("X-CWA-TELETAN-TYPE: expected TEST or EVENT")
            }
            type = parsed
        }
        do {
            guard let caller = context.identity else { throw VerificationFailure.unauthorized("no bearer token") }
            guard TeleTANAuthorization.permits(roles: caller.roles, type: type) else {
                throw VerificationFailure.unauthorized(
                    "the token's roles do not permit teleTANs of type \(type.rawValue)"
                )
            }
            let teleTAN = try await self.engine.createTeleTAN(type: type, bearer: caller)
            self.metrics.recordTeleTAN(type: type, outcome: "created")
            return try PaddedJSON.response(.created, encoding: TeleTANResponse(value: teleTAN.value))
        } catch let failure as VerificationFailure {
            switch failure {
            case .unauthorized: self.metrics.recordTeleTAN(type: type, outcome: "unauthorized")
            case .rateLimited: self.metrics.recordTeleTAN(type: type, outcome: "rate_limited")
            case .busy: self.metrics.recordTeleTAN(type: type, outcome: "busy")
            default: break
            }
            throw failure
        }
    }

    /// POST /version/v1/testresult → 200 `{"testResult", "sc", "labId"?, "testId"}`; 404 for an unknown token,
    /// 403 for a teleTAN session or a failed date-of-birth check.
    func testResult(_ request: Request, context: Context) async throws -> Response {
        let token = try await request.decodeJSON(as: RegistrationTokenBody.self, context: context).validated()
        let (result, guid) = try await self.engine.internalResult(token: token)
        return try PaddedJSON.response(
            .ok,
            encoding: InternalTestResultResponse(
                testResult: result.testResult,
                sc: result.sc,
                labId: result.labId,
                testId: guid.value
            )
        )
    }
}
