// The officers' pages: login, second factor, start, teleTAN issuance, password change, logout, JWKS, stylesheet.

import ENNHS
import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Routes of the portal. State lives in the database session named by the `portal_session` cookie, which
/// `SessionMiddleware` resolves for every page; an officer's pages sit behind `OfficerRequiredMiddleware`, and every
/// state-changing POST but logout behind `CSRFRequiredMiddleware`.
struct PortalController: Sendable {
    typealias Context = PortalRequestContext

    let engine: PortalEngine
    let circuitBreakers: any CircuitBreakerClient
    /// The NHS local-risk lists (`NHS_ENABLED`); without them the venue officer's pages are refused.
    let localRisk: NHSLocalRisk?
    let pages: Pages
    let secureCookies: Bool
    let stylesheet: String

    func addRoutes(to router: Router<Context>) {
        let pages = router.group().add(middleware: SessionMiddleware(engine: self.engine))
        pages.get("/login", use: self.loginPage)
        pages.get("/totp", use: self.totpPage)
        pages.post("/logout", use: self.logout)
        pages.group().add(middleware: CSRFRequiredMiddleware(pages: self.pages))
            .post("/login", use: self.login)
            .post("/totp", use: self.totp)
        let officer = pages.group().add(middleware: OfficerRequiredMiddleware())
        officer.get("/", use: self.start)
        officer.get("/password", use: self.passwordPage)
        officer.get("/circuit-breakers", use: self.circuitBreakerPage)
        officer.get("/local-risk", use: self.localRiskPage)
        officer.group().add(middleware: CSRFRequiredMiddleware(pages: self.pages))
            .post("/teletan", use: self.teleTAN)
            .post("/password", use: self.changePassword)
            .post("/circuit-breakers/switch", use: self.setCircuitBreaker)
            .post("/circuit-breakers/resolve", use: self.resolveCircuitBreaker)
            .post("/local-risk/preview", use: self.localRiskPreview)
            .post("/local-risk/publish", use: self.localRiskPublish)

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

    // MARK: - Cookies

    private func cookie(_ token: String) -> Cookie {
        Cookie(
            name: SessionMiddleware.cookieName,
            value: token,
            path: "/",
            secure: self.secureCookies,
            httpOnly: true,
            sameSite: .strict
        )
    }

    private func expiredCookie() -> Cookie {
        Cookie(
            name: SessionMiddleware.cookieName,
            value: "",
            maxAge: 0,
            path: "/",
            secure: self.secureCookies,
            httpOnly: true,
            sameSite: .strict
        )
    }

    private func sessionExpired(_ request: Request) -> Response {
        self.pages.error(
            .forbidden,
            "session_expired",
            language: Pages.language(of: request),
            values: ["link": "/login"]
        )
    }

    // MARK: - Login

    func loginPage(_ request: Request, context: Context) async throws -> Response {
        if let session = context.identity?.session {
            if session.stage == .authenticated { return Pages.redirect("/") }
            // A fresh anonymous session: the CSRF token of the old one is not known in clear.
            try await self.engine.discard(session)
        }
        let issued = try await self.engine.anonymousSession()
        var response = self.pages.render(
            "login",
            language: Pages.language(of: request),
            values: ["csrf": issued.csrf, "failed": request.uri.queryParameters["failed"] != nil]
        )
        response.setCookie(self.cookie(issued.token))
        return response
    }

    /// Behind `CSRFRequiredMiddleware`.
    func login(_ request: Request, context: Context) async throws -> Response {
        guard let identity = context.identity, let form = identity.form, identity.session.stage == .anonymous else {
            return self.sessionExpired(request)
        }
        let username = form["username"] ?? ""
        let password = form["password"] ?? ""
        guard !username.isEmpty, username.count <= 64, !password.isEmpty, password.count <= 128 else {
            return Pages.redirect("/login?failed=1")
        }
        switch try await self.engine.login(username: username, password: password, session: identity.session) {
        case .next(let token, _):
            var response = Pages.redirect("/totp")
            response.setCookie(self.cookie(token))
            return response
        case .refused:
            // The login page again, with the generic failure and a new anonymous session (a new CSRF token).
            return Pages.redirect("/login?failed=1")
        }
    }

    func totpPage(_ request: Request, context: Context) async throws -> Response {
        guard let session = context.identity?.session, session.stage == .password else {
            return Pages.redirect("/login")
        }
        let issued = try await self.engine.renew(session)
        var response = self.pages.render(
            "totp",
            language: Pages.language(of: request),
            values: ["csrf": issued.csrf, "failed": request.uri.queryParameters["failed"] != nil]
        )
        response.setCookie(self.cookie(issued.token))
        return response
    }

    /// Behind `CSRFRequiredMiddleware`.
    func totp(_ request: Request, context: Context) async throws -> Response {
        guard let identity = context.identity, let form = identity.form, identity.session.stage == .password else {
            return self.sessionExpired(request)
        }
        switch try await self.engine.secondFactor(code: form["code"] ?? "", session: identity.session) {
        case .next(let token, _):
            var response = Pages.redirect("/")
            response.setCookie(self.cookie(token))
            return response
        case .refused:
            // A new half-session: the failed attempt's cookie and CSRF token are spent, so every retry needs the page.
            var response = Pages.redirect("/totp?failed=1")
            if try await self.engine.session(token: request.cookies[SessionMiddleware.cookieName]?.value) != nil {
                response.setCookie(self.cookie(try await self.engine.renew(identity.session).token))
            }
            return response
        }
    }

    // MARK: - Pages of an officer

    /// Renders an officer's page with a fresh CSRF token (the session is renewed, keeping its age).
    func officerPage(
        _ template: String,
        status: HTTPResponse.Status = .ok,
        request: Request,
        session: PortalSession,
        officer: Officer,
        values: [String: Any] = [:]
    ) async throws -> Response {
        let issued = try await self.engine.renew(session)
        var context = values
        context["csrf"] = issued.csrf
        context["user"] = officer.username
        context["canTest"] = officer.has(.hotline)
        context["canEvent"] = officer.has(.hotlineEvent)
        context["canCircuitBreakers"] = officer.has(.circuitBreakerOfficer)
        context["canLocalRisk"] = self.localRisk != nil && officer.has(.venueOfficer)
        context["noRoles"] = !PortalRole.allCases.contains { officer.has($0) }
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

    /// Behind `OfficerRequiredMiddleware`.
    func start(_ request: Request, context: Context) async throws -> Response {
        let caller = try context.officer()
        return try await self.officerPage("start", request: request, session: caller.session, officer: caller.officer)
    }

    /// Behind `OfficerRequiredMiddleware` and `CSRFRequiredMiddleware`.
    func teleTAN(_ request: Request, context: Context) async throws -> Response {
        let language = Pages.language(of: request)
        let (session, officer, form) = try context.officer()
        guard let kind = TeleTANKind(rawValue: form["type"] ?? "") else {
            return self.pages.error(.badRequest, "bad_request", language: language)
        }
        switch try await self.engine.issueTeleTAN(officer: officer, kind: kind, authority: form["authority"]) {
        case .issued(let teleTAN, let validUntil):
            return try await self.officerPage(
                "teletan",
                request: request,
                session: session,
                officer: officer,
                values: [
                    "teletan": teleTAN, "validUntil": Pages.instant(validUntil, language: language),
                    "validUntilISO": ISO8601DateFormatter().string(from: validUntil),
                    "event": kind == .event,
                ]
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

    /// Behind `OfficerRequiredMiddleware`.
    func passwordPage(_ request: Request, context: Context) async throws -> Response {
        let caller = try context.officer()
        return try await self.officerPage(
            "password",
            request: request,
            session: caller.session,
            officer: caller.officer
        )
    }

    /// Behind `OfficerRequiredMiddleware` and `CSRFRequiredMiddleware`.
    func changePassword(_ request: Request, context: Context) async throws -> Response {
        let (session, officer, form) = try context.officer()
        let outcome = try await self.engine.changePassword(
            officer: officer,
            session: session,
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
        case .locked: (message, status) = ("password_locked", .forbidden)
        }
        return try await self.officerPage(
            "password",
            status: status,
            request: request,
            session: session,
            officer: officer,
            values: [
                "message": PageTexts.table(Pages.language(of: request))[message] ?? message, "ok": outcome == .changed,
            ]
        )
    }

    // MARK: - NHS circuit breakers

    /// Behind `OfficerRequiredMiddleware`: the switch and the pending counts of both kinds (role
    /// `circuit_breaker_officer`).
    func circuitBreakerPage(_ request: Request, context: Context) async throws -> Response {
        let language = Pages.language(of: request)
        let caller = try context.officer()
        guard caller.officer.has(.circuitBreakerOfficer) else {
            return self.pages.error(.forbidden, "forbidden", language: language)
        }
        let views: [NHSCircuitBreakerState]
        do { views = try await self.circuitBreakers.circuitBreakers() } catch {
            return self.pages.error(.serviceUnavailable, "unavailable", language: language)
        }
        let texts = PageTexts.table(language)
        let kinds: [[String: Any]] = views.map { view in
            var values: [String: Any] = [
                "kind": view.kind, "name": texts["cb_\(view.kind)"] ?? view.kind, "mode": view.mode,
                "pending": view.pending, "pendingByRule": view.pendingByRule, "hasPending": view.pending > 0,
                "oldestPending": view.oldestPending ?? "–", "lastHour": view.lastHour, "median": view.sameHourMedian,
                "threshold": view.threshold,
                "modes": ["yes", "no", "pending"].map { ["value": $0, "selected": $0 == view.mode] },
            ]
            if let quiet = view.ruleQuietUntil { values["quietUntil"] = quiet }
            return values
        }
        var values: [String: Any] = ["kinds": kinds]
        if let resolved = request.uri.queryParameters["resolved"].flatMap({ Int(String($0)) }) {
            values["resolved"] = "\(resolved)"
        }
        return try await self.officerPage(
            "circuitbreakers",
            request: request,
            session: caller.session,
            officer: caller.officer,
            values: values
        )
    }

    /// Behind `OfficerRequiredMiddleware` and `CSRFRequiredMiddleware`: sets a kind's switch, audits, back to the page.
    func setCircuitBreaker(_ request: Request, context: Context) async throws -> Response {
        try await self.circuitBreakerAction(request, context: context, field: "mode", values: ["yes", "no", "pending"])
        {
            kind,
            mode in
            try await self.circuitBreakers.setCircuitBreaker(kind: kind, mode: mode)
            return ("circuit_breaker_switched", "kind=\(kind) mode=\(mode)", "/circuit-breakers")
        }
    }

    /// Behind `OfficerRequiredMiddleware` and `CSRFRequiredMiddleware`: answers a kind's pending requests.
    func resolveCircuitBreaker(_ request: Request, context: Context) async throws -> Response {
        try await self.circuitBreakerAction(request, context: context, field: "approval", values: ["yes", "no"]) {
            kind,
            approval in
            let resolved = try await self.circuitBreakers.resolveCircuitBreaker(kind: kind, approval: approval)
            return (
                "circuit_breaker_resolved", "kind=\(kind) approval=\(approval) requests=\(resolved)",
                "/circuit-breakers?resolved=\(resolved)"
            )
        }
    }

    private func circuitBreakerAction(
        _ request: Request,
        context: Context,
        field: String,
        values: Set<String>,
        _ act: (String, String) async throws -> (action: String, details: String, location: String)
    ) async throws -> Response {
        let language = Pages.language(of: request)
        let (_, officer, form) = try context.officer()
        guard officer.has(.circuitBreakerOfficer) else {
            return self.pages.error(.forbidden, "forbidden", language: language)
        }
        guard let kind = form["kind"], ["exposure-notification", "venue"].contains(kind), let value = form[field],
            values.contains(value)
        else { return self.pages.error(.badRequest, "bad_request", language: language) }
        let done: (action: String, details: String, location: String)
        do { done = try await act(kind, value) } catch is UpstreamUnavailable {
            return self.pages.error(.serviceUnavailable, "unavailable", language: language)
        }
        try await self.engine.audit(officer.username, done.action, done.details)
        return Pages.redirect(done.location)
    }

    /// Ends the session when the form carries its CSRF token; always back to the login page, with the cookie gone.
    func logout(_ request: Request, context: Context) async throws -> Response {
        if let identity = context.identity, identity.form != nil {
            try await self.engine.logout(session: identity.session)
        }
        var response = Pages.redirect("/login")
        response.setCookie(self.expiredCookie())
        return response
    }
}
