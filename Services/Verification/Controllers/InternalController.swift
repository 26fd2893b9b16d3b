// The internal API: TAN verification for submission, teleTAN creation for the portal, the internal result poll.

import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird

/// Routes of the internal port, under `/version/v1`; the gateway never routes to them.
struct InternalController: Sendable {
    static let teleTANTypeHeader = HTTPField.Name("X-CWA-TELETAN-TYPE")!

    let engine: VerificationEngine
    let jwt: JWTVerifier
    let metrics: VerificationMetrics

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.post("tan/verify") { request, context in try await self.verify(request, context: context) }
        group.post("tan/teletan") { request, context in try await self.teleTAN(request, context: context) }
        group.post("testresult") { request, context in try await self.testResult(request, context: context) }
    }

    /// POST /version/v1/tan/verify → 200 with an empty body (plus `X-CWA-TELETAN-TYPE` for teleTAN-derived TANs),
    /// 404 when the TAN is unknown, expired or used. Each TAN verifies once.
    func verify(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let tan = try await request.decodeJSON(as: TANBody.self, context: context).validated()
        let type = try await self.engine.verifyTAN(tan)
        var headers = HTTPFields()
        if let type { headers[Self.teleTANTypeHeader] = type.rawValue }
        return Response(status: .ok, headers: headers)
    }

    /// POST /version/v1/tan/teletan → 201 `{"value": "<teleTAN>"}`. Needs a bearer JWT whose realm roles permit
    /// the type (`X-CWA-TELETAN-TYPE`, default TEST); the global rate limit is checked only after that.
    func teleTAN(_ request: Request, context: ServiceRequestContext) async throws -> Response {
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
            try self.authorize(request.headers[.authorization], type: type)
            let teleTAN = try await self.engine.createTeleTAN(type: type)
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

    /// A bearer JWT, valid now, whose roles permit `type`; 400 without the header, 401 for anything else wrong.
    private func authorize(_ authorization: String?, type: TeleTANType) throws(VerificationFailure) {
        guard let authorization else { throw .invalidRequest("the Authorization header is required") }
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw .unauthorized("expected Authorization: Bearer <JWT>")
        }
        let claims: JWTVerifier.Claims
        do {
            claims = try self.jwt.verify(String(authorization.dropFirst(7)), now: self.engine.clock.now)
        } catch {
            throw .unauthorized(error.description)
        }
        guard TeleTANAuthorization.permits(roles: claims.roles, type: type) else {
            throw .unauthorized("the token's roles do not permit teleTANs of type \(type.rawValue)")
        }
    }

    /// POST /version/v1/testresult → 200 `{"testResult", "sc", "labId"?, "testId"}`; 404 for an unknown token,
    /// 403 for a teleTAN session or a failed date-of-birth check.
    func testResult(_ request: Request, context: ServiceRequestContext) async throws -> Response {
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
