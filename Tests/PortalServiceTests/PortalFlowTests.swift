// Login with password and second factor, lockout, sessions, CSRF, logout and password change, through the router.

import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import MetricsTestKit
import Testing

@testable import PortalService

@Suite("Portal login and sessions", .postgres(PortalMigrations.group))
struct PortalFlowTests {
    @Test("password, then second factor, then the start page; the session id changes at every step")
    func fullLogin() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline", "c19hotline_event"])
            try await harness.browse { browser in
                let loginPage = try await browser.get("/login")
                #expect(loginPage.status == .ok)
                #expect(loginPage.has(id: "login"))
                #expect(loginPage.headers[.cacheControl] == "no-store")
                let anonymous = try #require(browser.cookie)

                let afterPassword = try await browser.post(
                    "/login",
                    ["username": "officer1", "password": PortalHarness.password]
                )
                #expect(afterPassword.status == .seeOther)
                #expect(afterPassword.location == "/totp")
                let passwordStage = try #require(browser.cookie)

                let totpPage = try await browser.get("/totp")
                #expect(totpPage.status == .ok)
                #expect(totpPage.has(id: "totp"))
                let renewed = try #require(browser.cookie)

                let afterCode = try await browser.post("/totp", ["code": harness.code(for: officer)])
                #expect(afterCode.status == .seeOther)
                #expect(afterCode.location == "/")
                let authenticated = try #require(browser.cookie)
                let setCookie = try #require(afterCode.setCookies.first)
                #expect(setCookie.contains("HttpOnly"))
                #expect(setCookie.contains("SameSite=Strict"))
                #expect(setCookie.contains("Path=/"))

                let start = try await browser.get("/")
                #expect(start.status == .ok)
                #expect(start.content(ofID: "user") == "officer1")
                #expect(start.has(id: "issue-test"))
                #expect(start.has(id: "issue-event"))
                #expect(start.has(id: "logout"))
                #expect(start.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
                #expect(start.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")

                // No fixation: a new id after the password and after the second factor; the old ids are dead.
                #expect(Set([anonymous, passwordStage, renewed, authenticated]).count == 4)
                for old in [anonymous, passwordStage, renewed] {
                    let reply = try await browser.probe("/", cookie: old)
                    #expect(reply.status == .seeOther)
                    #expect(reply.location == "/login")
                }
            }
            let actions = try await harness.actions(of: "officer1")
            #expect(actions == ["password_accepted", "login_succeeded"])
            #expect(
                try harness.metrics.expectCounter("en_portal_logins_total", [("outcome", "success")]).totalValue == 1
            )
        }
    }

    @Test("a wrong password and an unknown user get the same redirect and the same page")
    func sameFailure() async throws {
        try await PortalHarness.run { harness in
            try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                let wrong = try await browser.submitPassword("officer1", "not-the-password-1")
                let wrongPage = try await browser.get(try #require(wrong.location))
                let unknown = try await browser.submitPassword("nobody", PortalHarness.password)
                let unknownPage = try await browser.get(try #require(unknown.location))

                #expect(wrong.status == .seeOther)
                #expect(wrong.location == "/login?failed=1")
                #expect(unknown.status == wrong.status)
                #expect(unknown.location == wrong.location)
                #expect(wrongPage.status == .ok)
                #expect(wrongPage.has(id: "error"))
                #expect(wrongPage.withoutCSRF == unknownPage.withoutCSRF)
            }
        }
    }

    @Test("the password followed by a NUL byte and more, or with a control character, is a wrong password")
    func controlCharactersInPasswords() async throws {
        try await PortalHarness.run { harness in
            try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                for suffix in ["\0anything", "\0", "\u{8}"] {
                    let reply = try await browser.submitPassword("officer1", PortalHarness.password + suffix)
                    #expect(reply.location == "/login?failed=1", "suffix \(suffix.debugDescription)")
                }
                #expect(try await browser.submitPassword("officer1", PortalHarness.password).location == "/totp")
            }
            let actions = try await harness.actions(of: "officer1")
            #expect(actions == ["login_failed", "login_failed", "login_failed", "password_accepted"])
        }
    }

    @Test("five failures lock the account, even against the right password, for LOGIN_LOCK_DURATION")
    func lockout() async throws {
        try await PortalHarness.run { harness in
            try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                for attempt in 1...5 {
                    let reply = try await browser.submitPassword("officer1", "wrong-password-\(attempt)")
                    #expect(reply.location == "/login?failed=1")
                }
                #expect(
                    try await browser.submitPassword("officer1", PortalHarness.password).location == "/login?failed=1"
                )

                harness.clock.advance(by: 15 * 60 - 1)
                #expect(
                    try await browser.submitPassword("officer1", PortalHarness.password).location == "/login?failed=1"
                )

                harness.clock.advance(by: 1)
                #expect(try await browser.submitPassword("officer1", PortalHarness.password).location == "/totp")
            }
            let actions = try await harness.actions(of: "officer1")
            #expect(actions.filter { $0 == "login_failed" }.count == 5)
            #expect(actions.filter { $0 == "account_locked" }.count == 1)
            #expect(actions.filter { $0 == "login_refused" }.count == 2)
            #expect(actions.last == "password_accepted")
            let logins = { (outcome: String) in
                try harness.metrics.expectCounter("en_portal_logins_total", [("outcome", outcome)]).totalValue
            }
            #expect(try logins("failure") == 5)
            #expect(try logins("locked") == 2)
            #expect(try harness.metrics.expectCounter("en_portal_lockouts_total").totalValue == 1)
        }
    }

    @Test(
        "second factor: a wrong code and codes two steps off are refused, the neighbouring steps work, a code works once"
    )
    func secondFactor() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            let window = Set((-1...1).map { harness.code(for: officer, offset: Int64($0)) })
            let wrong = try #require(["000000", "111111", "222222", "333333"].first { !window.contains($0) })
            try await harness.browse { browser in
                // First login: a wrong code, then ±2 steps, then the previous step.
                #expect(try await browser.submitPassword("officer1", PortalHarness.password).location == "/totp")
                for code in [wrong, harness.code(for: officer, offset: -2), harness.code(for: officer, offset: 2)] {
                    _ = try await browser.get("/totp")
                    let refused = try await browser.post("/totp", ["code": code])
                    #expect(refused.location == "/totp?failed=1")
                }
                let failedPage = try await browser.get("/totp?failed=1")
                #expect(failedPage.has(id: "error"))
                #expect(
                    try await browser.post("/totp", ["code": harness.code(for: officer, offset: -1)]).location == "/"
                )
                #expect(try await browser.post("/logout").location == "/login")

                // Second login: the code just used is refused (replay); the next step's code works.
                #expect(try await browser.submitPassword("officer1", PortalHarness.password).location == "/totp")
                _ = try await browser.get("/totp")
                #expect(
                    try await browser.post("/totp", ["code": harness.code(for: officer, offset: -1)]).location
                        == "/totp?failed=1"
                )
                _ = try await browser.get("/totp?failed=1")
                #expect(
                    try await browser.post("/totp", ["code": harness.code(for: officer, offset: 1)]).location == "/"
                )
                #expect(try await browser.post("/logout").location == "/login")

                // Third login: a code older than the last one used is refused too, until time moves on.
                #expect(try await browser.submitPassword("officer1", PortalHarness.password).location == "/totp")
                _ = try await browser.get("/totp")
                #expect(
                    try await browser.post("/totp", ["code": harness.code(for: officer)]).location == "/totp?failed=1"
                )
                harness.clock.advance(by: 60)
                _ = try await browser.get("/totp?failed=1")
                #expect(try await browser.post("/totp", ["code": harness.code(for: officer)]).location == "/")
            }
            let actions = try await harness.actions(of: "officer1")
            #expect(actions.filter { $0 == "totp_failed" }.count == 5)
            #expect(actions.filter { $0 == "login_succeeded" }.count == 3)
            #expect(!actions.contains("account_locked"))
        }
    }

    @Test(
        "a post without the session's CSRF token gets 403 and changes nothing",
        arguments: [PortalBrowser.CSRF.missing, .forged]
    )
    func csrf(_ token: PortalBrowser.CSRF) async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            let hashBefore = officer.passwordHash
            try await harness.browse { browser in
                // POST /login
                _ = try await browser.get("/login")
                let login = try await browser.post(
                    "/login",
                    ["username": "officer1", "password": PortalHarness.password],
                    csrf: token
                )
                #expect(login.status == .forbidden)
                #expect(login.has(id: "error-message"))
                #expect(try await browser.get("/totp").location == "/login")

                // POST /totp: refused, and the code is not used up by the refused post.
                #expect(try await browser.submitPassword("officer1", PortalHarness.password).location == "/totp")
                _ = try await browser.get("/totp")
                let code = harness.code(for: officer)
                #expect(try await browser.post("/totp", ["code": code], csrf: token).status == .forbidden)
                #expect(try await browser.get("/").location == "/login")
                #expect(try await browser.post("/totp", ["code": code]).location == "/")
                #expect(try await browser.get("/").status == .ok)

                // POST /teletan
                let teleTAN = try await browser.post("/teletan", ["type": "TEST"], csrf: token)
                #expect(teleTAN.status == .forbidden)
                #expect(await harness.issuer.calls.isEmpty)

                // POST /password
                _ = try await browser.get("/password")
                let change = try await browser.post(
                    "/password",
                    ["current": PortalHarness.password, "new": "another-Password-42", "repeat": "another-Password-42"],
                    csrf: token
                )
                #expect(change.status == .forbidden)

                // POST /logout: the cookie is dropped, but the session lives on.
                let session = try #require(browser.cookie)
                #expect(try await browser.post("/logout", csrf: token).location == "/login")

                // Nothing was taken and the session is alive (reusing requires its start page): the teleTAN slot is free.
                let issued = try await PortalBrowser.reusing(session, on: harness.app)
                #expect(issued == .ok)
            }
            let after = try await harness.repository.officer(named: "officer1")
            #expect(after?.passwordHash == hashBefore)
            let actions = try await harness.actions(of: "officer1")
            #expect(actions.filter { $0 == "password_accepted" }.count == 1)
            #expect(!actions.contains("password_changed"))
            #expect(!actions.contains("logout"))
        }
    }

    @Test("logout ends the session: the old cookie leads back to the login")
    func logout() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                let session = try #require(browser.cookie)

                let out = try await browser.post("/logout")

                #expect(out.status == .seeOther)
                #expect(out.location == "/login")
                #expect(out.setCookies.contains { $0.hasPrefix("portal_session=;") && $0.contains("Max-Age=0") })
                #expect(browser.cookie == nil)
                let old = try await browser.probe("/", cookie: session)
                #expect(old.status == .seeOther)
                #expect(old.location == "/login")
                #expect(try await browser.get("/").location == "/login")
            }
            #expect(try await harness.actions(of: "officer1").last == "logout")
            #expect(try await harness.database.count("portal_session", where: "stage = 'authenticated'") == 0)
        }
    }

    @Test("a session ends after 30 idle minutes")
    func idleTimeout() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                harness.clock.advance(by: 29 * 60)
                #expect(try await browser.get("/").status == .ok)

                harness.clock.advance(by: 31 * 60)
                let reply = try await browser.get("/")

                #expect(reply.status == .seeOther)
                #expect(reply.location == "/login")
            }
            #expect(try await harness.database.count("portal_session") == 0)
        }
    }

    @Test("a session ends 4 hours after login, however active")
    func lifetime() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                for _ in 1...11 {
                    harness.clock.advance(by: 20 * 60)
                    #expect(try await browser.get("/").status == .ok)
                }
                // 220 minutes so far; 21 more make 241, within the idle limit but past the lifetime.
                harness.clock.advance(by: 21 * 60)
                let reply = try await browser.get("/")

                #expect(reply.status == .seeOther)
                #expect(reply.location == "/login")
            }
        }
    }

    @Test("between password and second factor at most 5 minutes")
    func secondFactorTimeout() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                #expect(try await browser.submitPassword("officer1", PortalHarness.password).location == "/totp")
                _ = try await browser.get("/totp")
                harness.clock.advance(by: 5 * 60 + 1)

                #expect(try await browser.post("/totp", ["code": harness.code(for: officer)]).status == .forbidden)
                #expect(try await browser.get("/totp").location == "/login")
            }
        }
    }

    @Test("password change: wrong current, mismatch and too short get 400; a good change logs in with the new password")
    func passwordChange() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            let newPassword = "a-New+Password&9"
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                let page = try await browser.get("/password")
                #expect(page.status == .ok)
                #expect(page.has(id: "password-form"))

                let cases: [(KeyValuePairs<String, String>, String)] = [
                    (["current": "not-the-password-1", "new": newPassword, "repeat": newPassword], "password_wrong"),
                    (
                        ["current": PortalHarness.password, "new": newPassword, "repeat": newPassword + "x"],
                        "password_mismatch"
                    ),
                    (["current": PortalHarness.password, "new": "short-pw", "repeat": "short-pw"], "password_weak"),
                    (["current": PortalHarness.password, "new": "officer1", "repeat": "officer1"], "password_weak"),
                ]
                for (fields, message) in cases {
                    let reply = try await browser.post("/password", fields)
                    #expect(reply.status == .badRequest, "\(message)")
                    #expect(reply.content(ofID: "message") == PageTexts.english[message])
                }

                let changed = try await browser.post(
                    "/password",
                    ["current": PortalHarness.password, "new": newPassword, "repeat": newPassword]
                )
                #expect(changed.status == .ok)
                #expect(changed.content(ofID: "message") == PageTexts.english["password_changed"])
                #expect(try await browser.post("/logout").location == "/login")

                harness.clock.advance(by: 30)
                #expect(
                    try await browser.submitPassword("officer1", PortalHarness.password).location == "/login?failed=1"
                )
                try await browser.signIn("officer1", password: newPassword, code: harness.code(for: officer))
            }
            let actions = try await harness.actions(of: "officer1")
            #expect(actions.filter { $0 == "password_changed" }.count == 1)
            #expect(!harness.logText.contains(newPassword))
            #expect(!harness.logText.contains(PortalHarness.password))
        }
    }
}
