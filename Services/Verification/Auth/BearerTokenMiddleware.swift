// Authentication of teleTAN requests: the portal's (or a health authority's) bearer JWT.

import ENServiceKit
import HTTPTypes
import Hummingbird

/// The request context of the internal listener: a teleTAN request carries the verified token's claims.
typealias InternalRequestContext = IdentifiedRequestContext<JWTVerifier.Claims>

/// Requires `Authorization: Bearer <JWT>` with a token `verifier` accepts now, and sets its claims as the request's
/// identity: 400 without the header, 401 for anything else wrong. Which roles may do what is the handler's rule.
struct BearerTokenMiddleware: RouterMiddleware {
    typealias Context = InternalRequestContext

    let verifier: JWTVerifier
    let clock: WallClock
    /// Called for every request refused with 401 (the teleTAN metrics count them).
    let refused: @Sendable (Request) -> Void

    func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        guard let authorization = request.headers[.authorization] else {
            throw VerificationFailure.invalidRequest("the Authorization header is required")
        }
        var context = context
        do {
            context.identity = try self.claims(authorization)
        } catch {
            self.refused(request)
            throw error
        }
        return try await next(request, context)
    }

    private func claims(_ authorization: String) throws(VerificationFailure) -> JWTVerifier.Claims {
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw .unauthorized("expected Authorization: Bearer <JWT>")
        }
        do {
            return try self.verifier.verify(String(authorization.dropFirst(7)), now: self.clock.now)
        } catch {
            throw .unauthorized(error.description)
        }
    }
}
