// The NHS circuit-breaker page of the portal (nhs §7): role `circuit_breaker_officer` only, counts shown, the switch
// and the resolution of waiting requests passed to verification-service, each audited; CSRF required.

import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Testing

@testable import PortalService

@Suite("Portal circuit breakers", .postgres(PortalMigrations.group))
struct PortalCircuitBreakerTests {
    @Test("an officer with the role sees both kinds, sets a switch and releases waiting requests; each step audited")
    func officerActs() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("cbofficer", roles: ["circuit_breaker_officer"])
            await harness.circuitBreakers.hold(3, kind: "venue")
            try await harness.browse { browser in
                let start = try await harness.signIn(browser, officer)
                #expect(start.has(id: "circuit-breakers"), "the start page links the circuit breakers")
                let page = try await browser.get("/circuit-breakers")
                #expect(page.status == .ok)
                #expect(page.content(ofID: "pending-venue") == "3")
                #expect(page.content(ofID: "switch-exposure-notification") == "yes")
                #expect(page.has(id: "release-venue") && !page.has(id: "release-exposure-notification"))

                let switched = try await browser.post(
                    "/circuit-breakers/switch",
                    ["kind": "exposure-notification", "mode": "pending"]
                )
                #expect(switched.status == .seeOther)
                #expect(switched.headers[.location] == "/circuit-breakers")
                _ = try await browser.get("/circuit-breakers")
                let released = try await browser.post(
                    "/circuit-breakers/resolve",
                    ["kind": "venue", "approval": "yes"]
                )
                #expect(released.headers[.location] == "/circuit-breakers?resolved=3")
                let after = try await browser.get("/circuit-breakers?resolved=3")
                #expect(after.content(ofID: "resolved")?.hasSuffix("3") == true)
                #expect(after.content(ofID: "pending-venue") == "0")
                #expect(after.content(ofID: "switch-exposure-notification") == "pending")
            }
            let audit = try await harness.audit().filter { $0.action.hasPrefix("circuit_breaker") }
            #expect(audit.map(\.action) == ["circuit_breaker_switched", "circuit_breaker_resolved"])
            #expect(
                audit.map(\.details) == [
                    "kind=exposure-notification mode=pending", "kind=venue approval=yes requests=3",
                ]
            )
        }
    }

    @Test("without the role: 403 on the page and on both forms, nothing changes; bad values 400; no CSRF refused")
    func refusals() async throws {
        try await PortalHarness.run { harness in
            let hotline = try await harness.addOfficer("hotline1", roles: ["c19hotline"])
            await harness.circuitBreakers.hold(2, kind: "venue")
            try await harness.browse { browser in
                let start = try await harness.signIn(browser, hotline)
                #expect(!start.has(id: "circuit-breakers"))
                #expect(try await browser.get("/circuit-breakers").status == .forbidden)
                _ = try await browser.get("/")
                let resolve = try await browser.post("/circuit-breakers/resolve", ["kind": "venue", "approval": "yes"])
                #expect(resolve.status == .forbidden)
            }
            #expect(await harness.circuitBreakers.views["venue"]?.pending == 2)

            let officer = try await harness.addOfficer("cbofficer", roles: ["circuit_breaker_officer"])
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                _ = try await browser.get("/circuit-breakers")
                #expect(
                    try await browser.post("/circuit-breakers/switch", ["kind": "venue", "mode": "maybe"]).status
                        == .badRequest
                )
                _ = try await browser.get("/circuit-breakers")
                #expect(
                    try await browser.post("/circuit-breakers/resolve", ["kind": "all", "approval": "yes"]).status
                        == .badRequest
                )
                _ = try await browser.get("/circuit-breakers")
                let forged = try await browser.post(
                    "/circuit-breakers/resolve",
                    ["kind": "venue", "approval": "no"],
                    csrf: .missing
                )
                #expect(forged.status == .forbidden)
            }
            #expect(await harness.circuitBreakers.views["venue"]?.pending == 2)
            #expect(await harness.circuitBreakers.views["venue"]?.mode == "yes")
        }
    }
}
