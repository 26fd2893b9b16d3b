// The officers' pages: login, second factor, start, teleTAN issuance, password change, logout, JWKS, stylesheet.

import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Routes of the portal. State lives in the database session named by the `portal_session` cookie; every POST
/// carries the session's CSRF token.
struct PortalController: Sendable {
    let engine: PortalEngine
    let pages: Pages
    let secureCookies: Bool
    let stylesheet: String
    static let cookieName = "portal_session"

    func addRoutes(to router: Router<ServiceRequestContext>) {
        router.get("/login", use: self.loginPage)
        router.post("/login", use: self.login)
        router.get("/totp", use: self.totpPage)
        router.post("/totp", use: self.totp)
        router.get("/", use: self.start)
        router.post("/teletan", use: self.teleTAN)
        router.get("/password", use: self.passwordPage)
        router.post("/password", use: self.changePassword)
        router.post("/logout", use: self.logout)
        router.get("/.well-known/jwks.json") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: .init(string: self.engine.signer.jwks))
            )
        }
        router.get("/static/portal.css") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "public, max-age=3600"],
                body: .init(byteBuffer: .init(string: self.stylesheet))
            )
        }
        router.get("**") { request, _ in
            self.pages.error(.notFound, "not_found", language: Pages.language(of: request))
        }
    }

    // MARK: - Session plumbing

    private func cookie(_ token: String) -> Cookie {
        Cookie(
            name: Self.cookieName,
            value: token,
            path: "/",
            secure: self.secureCookies,
            httpOnly: true,
            sameSite: .strict
        )
    }

    private func expiredCookie() -> Cookie {
        Cookie(
            name: Self.cookieName,
            value: "",
            maxAge: 0,
            path: "/",
            secure: self.secureCookies,
            httpOnly: true,
            sameSite: .strict
        )
    }

    private func session(_ request: Request) async throws -> PortalSession? {
        try await self.engine.session(token: request.cookies[Self.cookieName]?.value)
    }

    /// An authenticated session and its officer, or the answer to give instead (a redirect to the login).
    private func authenticated(_ request: Request) async throws -> (PortalSession, Officer)? {
        guard let session = try await self.session(request), let officer = try await self.engine.officer(of: session)
        else { return nil }
        return (session, officer)
    }

    // MARK: - Login

    func loginPage(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let language = Pages.language(of: request)
        if let session = try await self.session(request) {
            if session.stage == .authenticated { return Pages.redirect("/") }
            // A fresh anonymous session: the CSRF token of the old one is not known in clear.
            try await self.engine.store.deleteSession(tokenHash: session.tokenHash)
        }
        let issued = try await self.engine.anonymousSession()
        var response = self.pages.render(
            "login",
            language: language,
            values: ["csrf": issued.csrf, "failed": request.uri.queryParameters["failed"] != nil]
        )
        response.setCookie(self.cookie(issued.token))
        return response
    }

    func login(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let language = Pages.language(of: request)
        let form = try await FormFields.read(request, context: context)
        guard let session = try await self.session(request), session.stage == .anonymous,
            self.engine.checkCSRF(form["csrf"], session: session)
        else {
            return self.pages.error(.forbidden, "session_expired", language: language, values: ["link": "/login"])
        }
        let username = form["username"] ?? ""
        let password = form["password"] ?? ""
        guard !username.isEmpty, username.count <= 64, !password.isEmpty, password.count <= 128 else {
            return Pages.redirect("/login?failed=1")
        }
        switch try await self.engine.login(username: username, password: password, session: session) {
        case .next(let token, _):
            var response = Pages.redirect("/totp")
            response.setCookie(self.cookie(token))
            return response
        case .refused:
            // The login page again, with the generic failure and a new anonymous session (a new CSRF token).
            return Pages.redirect("/login?failed=1")
        }
    }

    func totpPage(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        guard let session = try await self.session(request), session.stage == .password else {
            return Pages.redirect("/login")
        }
        // The form needs the CSRF token in clear; only its hash is stored, so the session is renewed with a new one.
        let issued = try await self.renew(session)
        var response = self.pages.render(
            "totp",
            language: Pages.language(of: request),
            values: ["csrf": issued.csrf, "failed": request.uri.queryParameters["failed"] != nil]
        )
        response.setCookie(self.cookie(issued.token))
        return response
    }

    func totp(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let language = Pages.language(of: request)
        let form = try await FormFields.read(request, context: context)
        guard let session = try await self.session(request), session.stage == .password,
            self.engine.checkCSRF(form["csrf"], session: session)
        else {
            return self.pages.error(.forbidden, "session_expired", language: language, values: ["link": "/login"])
        }
        switch try await self.engine.secondFactor(code: form["code"] ?? "", session: session) {
        case .next(let token, _):
            var response = Pages.redirect("/")
            response.setCookie(self.cookie(token))
            return response
        case .refused:
            return Pages.redirect("/totp?failed=1")
        }
    }

    /// The same session under a new id and CSRF token (stage, officer and age kept).
    private func renew(_ session: PortalSession) async throws -> IssuedSession {
        let issued = IssuedSession(token: PortalEngine.randomToken(), csrf: PortalEngine.randomToken())
        try await self.engine.store.deleteSession(tokenHash: session.tokenHash)
        try await self.engine.store.createSession(
            tokenHash: PortalEngine.hash(issued.token),
            csrfHash: PortalEngine.hash(issued.csrf),
            officerID: session.officerID,
            stage: session.stage,
            createdAt: session.createdAt,
            now: self.engine.clock.now
        )
        return issued
    }

    // MARK: - Pages of an officer

    /// Renders an officer's page with a fresh CSRF token (the session is renewed, keeping its age).
    private func officerPage(
        _ template: String,
        status: HTTPResponse.Status = .ok,
        request: Request,
        session: PortalSession,
        officer: Officer,
        values: [String: Any] = [:]
    ) async throws -> Response {
        let issued = try await self.renew(session)
        var context = values
        context["csrf"] = issued.csrf
        context["user"] = officer.username
        context["canTest"] = officer.has(.hotline)
        context["canEvent"] = officer.has(.hotlineEvent)
        context["noRoles"] = !officer.has(.hotline) && !officer.has(.hotlineEvent)
        context["authorities"] = self.engine.authorities.map { ["id": $0.id, "name": $0.name] }
        var response = self.pages.render(
            template,
            status: status,
            language: Pages.language(of: request),
            values: context
        )
        response.setCookie(self.cookie(issued.token))
        return response
    }

    func start(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        guard let (session, officer) = try await self.authenticated(request) else { return Pages.redirect("/login") }
        return try await self.officerPage("start", request: request, session: session, officer: officer)
    }

    func teleTAN(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let language = Pages.language(of: request)
        let form = try await FormFields.read(request, context: context)
        guard let (session, officer) = try await self.authenticated(request) else { return Pages.redirect("/login") }
        guard self.engine.checkCSRF(form["csrf"], session: session) else {
            return self.pages.error(.forbidden, "session_expired", language: language, values: ["link": "/login"])
        }
        guard let kind = TeleTANKind(rawValue: form["type"] ?? "") else {
            return self.pages.error(.badRequest, "bad_request", language: language)
        }
        switch try await self.engine.issueTeleTAN(officer: officer, kind: kind, authority: form["authority"]) {
        case .issued(let teleTAN, let validUntil):
            let formatter = ISO8601DateFormatter()
            return try await self.officerPage(
                "teletan",
                request: request,
                session: session,
                officer: officer,
                values: ["teletan": teleTAN, "validUntil": formatter.string(from: validUntil), "event": kind == .event]
            )
        case .tooSoon(let seconds):
            return try await self.officerPage(
                "ratelimit",
                status: .tooManyRequests,
                request: request,
                session: session,
                officer: officer,
                values: ["seconds": seconds]
            )
        case .serverRateLimited:
            return self.pages.error(.tooManyRequests, "server_rate_limited", language: language)
        case .forbidden:
            return self.pages.error(.forbidden, "forbidden", language: language)
        case .unknownAuthority:
            return self.pages.error(.badRequest, "unknown_authority", language: language)
        case .unavailable:
            return self.pages.error(.serviceUnavailable, "unavailable", language: language)
        }
    }

    func passwordPage(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        guard let (session, officer) = try await self.authenticated(request) else { return Pages.redirect("/login") }
        return try await self.officerPage("password", request: request, session: session, officer: officer)
    }

    func changePassword(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let language = Pages.language(of: request)
        let form = try await FormFields.read(request, context: context)
        guard let (session, officer) = try await self.authenticated(request) else { return Pages.redirect("/login") }
        guard self.engine.checkCSRF(form["csrf"], session: session) else {
            return self.pages.error(.forbidden, "session_expired", language: language, values: ["link": "/login"])
        }
        let outcome = try await self.engine.changePassword(
            officer: officer,
            current: form["current"] ?? "",
            new: form["new"] ?? "",
            repeated: form["repeat"] ?? ""
        )
        let message: String
        let status: HTTPResponse.Status
        switch outcome {
        case .changed: (message, status) = ("password_changed", .ok)
        case .wrongPassword: (message, status) = ("password_wrong", .badRequest)
        case .mismatch: (message, status) = ("password_mismatch", .badRequest)
        case .tooWeak: (message, status) = ("password_weak", .badRequest)
        }
        return try await self.officerPage(
            "password",
            status: status,
            request: request,
            session: session,
            officer: officer,
            values: ["message": Texts.table(language)[message] ?? message, "ok": outcome == .changed]
        )
    }

    func logout(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let form = try await FormFields.read(request, context: context)
        if let session = try await self.session(request), self.engine.checkCSRF(form["csrf"], session: session) {
            try await self.engine.logout(session: session)
        }
        var response = Pages.redirect("/login")
        response.setCookie(self.expiredCookie())
        return response
    }
}
