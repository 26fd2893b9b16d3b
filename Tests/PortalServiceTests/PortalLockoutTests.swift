// The lockout holds against parallel guesses, counts every secret an officer types, and a changed password or a
// failed second factor leaves nothing usable behind (issue 15, finding 4).

import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

@testable import PortalService

@Suite("Portal lockout and session hygiene", .postgres(PortalMigrations.group))
struct PortalLockoutTests {
    @Test("40 parallel wrong passwords: exactly 5 are checked, the others are refused as locked without a check")
    func parallelGuesses() async throws {
        try await PortalHarness.run { harness in
            try await harness.addOfficer("officer1", roles: ["c19hotline"])
            var sessions: [PortalSession] = []
            for _ in 0..<40 {
                let issued = try await harness.engine.anonymousSession()
                sessions.append(try #require(try await harness.engine.session(token: issued.token)))
            }

            let outcomes = try await withThrowingTaskGroup(of: LoginOutcome.self) { group in
                for session in sessions {
                    group.addTask {
                        try await harness.engine.login(
                            username: "officer1",
                            password: "wrong-guess-123",
                            session: session
                        )
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let events = try await harness.audit().filter { $0.username == "officer1" }

            #expect(outcomes.count == 40 && outcomes.allSatisfy { $0 == .refused })
            #expect(events.filter { $0.details == "wrong password" }.count == 5)
            #expect(events.filter { $0.action == "login_refused" && $0.details == "locked" }.count == 35)
            #expect(events.filter { $0.action == "account_locked" }.count == 1)
        }
    }

    @Test("the password step and wrong codes count toward the lockout: the right password and 4 wrong codes lock")
    func secondFactorCounts() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                let afterPassword = try await browser.submitPassword("officer1", PortalHarness.password)
                #expect(afterPassword.location == "/totp")
                for _ in 0..<4 {
                    _ = try await browser.get("/totp")
                    let wrong = try await browser.post("/totp", ["code": harness.code(for: officer, offset: 5)])
                    #expect(wrong.location == "/totp?failed=1")
                }

                let again = try await browser.submitPassword("officer1", PortalHarness.password)

                #expect(again.location == "/login?failed=1")
            }
            let actions = try await harness.actions(of: "officer1")
            #expect(actions.filter { $0 == "totp_failed" }.count == 4)
            #expect(actions.contains("account_locked"))
            #expect(actions.last == "login_refused")
        }
    }

    @Test("a failed second factor spends the half-session: its cookie and CSRF token cannot be used for another try")
    func failedSecondFactorRotates() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.app.test(.router) { client in
                let browser = PortalBrowser(client: client)
                _ = try await browser.submitPassword("officer1", PortalHarness.password)
                _ = try await browser.get("/totp")
                let (cookie, csrf) = (try #require(browser.cookie), try #require(browser.csrf))

                let wrong = try await browser.post("/totp", ["code": harness.code(for: officer, offset: 5)])
                let renewed = try #require(browser.cookie)
                let replay = try await PortalBrowser(client: client, cookie: cookie, csrf: csrf)
                    .post("/totp", ["code": harness.code(for: officer)])

                #expect(wrong.location == "/totp?failed=1")
                #expect(renewed != cookie)
                #expect(replay.status == .forbidden)
            }
        }
    }

    @Test("a changed password ends the officer's other sessions; a wrong current password counts toward the lockout")
    func passwordChange() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            let other = try await harness.signedInCookie(officer)
            harness.clock.advance(by: 30)
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                _ = try await browser.get("/password")
                let wrong = try await browser.post(
                    "/password",
                    ["current": "not-the-password-1", "new": "another-Password-42", "repeat": "another-Password-42"]
                )
                _ = try await browser.get("/password")
                let changed = try await browser.post(
                    "/password",
                    ["current": PortalHarness.password, "new": "another-Password-42", "repeat": "another-Password-42"]
                )
                let stillIn = try await browser.get("/")
                let otherSession = try await browser.probe("/", cookie: other)

                #expect(wrong.status == .badRequest)
                #expect(changed.status == .ok)
                #expect(stillIn.status == .ok)
                #expect(otherSession.status == .seeOther && otherSession.location == "/login")
            }
            let actions = try await harness.actions(of: "officer1")
            #expect(actions.contains("password_change_failed"))
            #expect(actions.last == "password_changed")
        }
    }

    @Test("the decoy hash has the configured bcrypt cost, so a refusal without a check takes as long as a check")
    func decoyCost() async throws {
        try await PortalHarness.run(["BCRYPT_COST": "5"]) { harness in
            #expect(harness.engine.decoyHash.hasPrefix("$2b$05$") || harness.engine.decoyHash.hasPrefix("$2a$05$"))
        }
    }

    @Test("a user name with control characters never reaches the audit trail; the audit command escapes what it prints")
    func controlCharacters() async throws {
        try await PortalHarness.run { harness in
            try await harness.browse { browser in
                let reply = try await browser.submitPassword("officer1\u{1b}[2J\u{202e}", "not-the-password-1")
                #expect(reply.location == "/login?failed=1")
            }
            let stored = try await harness.audit()

            #expect(!stored.contains { $0.username.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x202E } })
            #expect(stored.contains { $0.details == "user name with control characters" })
            #expect(PortalCommands.printable("a\u{1b}[2J\tb\u{202e}") == #"a\u{1b}[2J\u{9}b\u{202e}"#)
        }
    }
}
