// Who is asking: the session of the cookie, its officer, and for a POST the form whose CSRF token matched.

import ENServiceKit
import HTTPTypes
import Hummingbird

/// The request context of the portal's pages.
typealias PortalRequestContext = IdentifiedRequestContext<PortalIdentity>

/// The caller of a page: set by `SessionMiddleware` when the `portal_session` cookie names a live session.
struct PortalIdentity: Sendable {
    var session: PortalSession
    /// The officer of an authenticated session (never a disabled one).
    var officer: Officer?
    /// The fields of a POST whose `csrf` field is the session's CSRF token; `nil` for any other request.
    var form: FormFields?
}

/// Resolves the session cookie (touching the session, or ending it when it expired) and, for a POST, reads the form
/// and checks its CSRF token against the session. Sets the identity; refuses nothing itself.
struct SessionMiddleware: RouterMiddleware {
    typealias Context = PortalRequestContext
    static let cookieName = "portal_session"

    let engine: PortalEngine

    func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        var context = context
        let session = try await self.engine.session(token: request.cookies[Self.cookieName]?.value)
        var officer: Officer? = nil
        if let session { officer = try await self.engine.officer(of: session) }
        // The large bodies of the local-risk pages only for an officer who may send them; anyone else's form is
        // read up to 16 KB, so no one reaches the 3 MB without logging in.
        let form =
            request.method == .post
            ? try await FormFields.read(request, large: officer?.has(.venueOfficer) == true) : nil
        if let session {
            context.identity = PortalIdentity(
                session: session,
                officer: officer,
                form: form.flatMap { self.engine.checkCSRF($0["csrf"], session: session) ? $0 : nil }
            )
        }
        return try await next(request, context)
    }
}

/// Lets only an authenticated officer through; anyone else is sent to the login page.
struct OfficerRequiredMiddleware: RouterMiddleware {
    typealias Context = PortalRequestContext

    func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        guard context.identity?.officer != nil else { return Pages.redirect("/login") }
        return try await next(request, context)
    }
}

/// Lets a POST through only with a live session and its CSRF token; otherwise the "session expired" page (403).
struct CSRFRequiredMiddleware: RouterMiddleware {
    typealias Context = PortalRequestContext

    let pages: Pages

    func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        guard context.identity?.form != nil else {
            return self.pages.error(
                .forbidden,
                "session_expired",
                language: Pages.language(of: request),
                values: ["link": "/login"]
            )
        }
        return try await next(request, context)
    }
}

extension IdentifiedRequestContext<PortalIdentity> {
    /// The session, officer and form of a request behind `OfficerRequiredMiddleware` (and, for a POST,
    /// `CSRFRequiredMiddleware`); throws only when a route is mounted without them.
    func officer() throws -> (session: PortalSession, officer: Officer, form: FormFields) {
        guard let identity = self.identity, let officer = identity.officer else {
            throw HTTPError(.internalServerError, message: "route mounted without OfficerRequiredMiddleware")
        }
        return (identity.session, officer, identity.form ?? FormFields(""))
    }
}
