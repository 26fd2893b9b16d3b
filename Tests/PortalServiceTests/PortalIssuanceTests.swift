// teleTAN issuance through the portal's pages: roles per page and per POST, the officer's interval across two
// replicas, verification-service down or at its limit, the Host allowlist, and the portal's token at a real
// verification-service.

import AsyncHTTPClient
import Crypto
import ENCrypto
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MetricsTestKit
import PostgresNIO
import Testing

@testable import PortalService

@Suite("Portal teleTAN issuance", .postgres(PortalMigrations.group))
struct PortalIssuanceTests {
    @Test("a TEST teleTAN: shown once with its validity, no-store, audited without the teleTAN, never logged")
    func issueTest() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)

                let result = try await browser.post("/teletan", ["type": "TEST"])

                #expect(result.status == .ok)
                #expect(result.content(ofID: "teletan") == PortalHarness.teleTAN)
                #expect(result.headers[.cacheControl] == "no-store")
                let validity = try #require(result.content(ofID: "validity"))
                let until = harness.clock.now.addingTimeInterval(3600)
                #expect(validity == Pages.instant(until, language: .en))
                #expect(result.text.contains(#"datetime="\#(ISO8601DateFormatter().string(from: until))""#))
                #expect(result.text.contains("<title>teleTAN · Corona-Warn-App portal</title>"))
            }
            #expect(await harness.issuer.calls.map(\.kind) == [.test])
            let audit = try await harness.audit().filter { $0.action == "teletan_issued" }
            #expect(audit.map(\.details) == ["type=TEST"])
            #expect(try await harness.audit().allSatisfy { !$0.details.contains(PortalHarness.teleTAN) })
            #expect(!harness.logText.contains(PortalHarness.teleTAN))
        }
    }

    @Test("an EVENT teleTAN names a configured health authority; an unknown one gets 400 and no call")
    func issueEvent() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline_event"])
            let authority = try #require(harness.configuration.authorities.first)
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)

                let unknown = try await browser.post("/teletan", ["type": "EVENT", "authority": "no-such-authority"])
                #expect(unknown.status == .badRequest)
                #expect(await harness.issuer.calls.isEmpty)

                _ = try await browser.get("/")
                let result = try await browser.post("/teletan", ["type": "EVENT", "authority": authority.id])
                #expect(result.status == .ok)
                #expect(result.content(ofID: "teletan") == PortalHarness.teleTAN)
                #expect(
                    result.content(ofID: "validity")
                        == Pages.instant(harness.clock.now.addingTimeInterval(2 * 86_400), language: .en)
                )
            }
            #expect(await harness.issuer.calls.map(\.kind) == [.event])
            let audit = try await harness.audit().filter { $0.action == "teletan_issued" }
            #expect(audit.map(\.details) == ["type=EVENT authority=\(authority.name)"])
        }
    }

    @Test(
        "roles decide what the start page offers and what a POST may do",
        arguments: [
            (["c19hotline"], true, false),
            (["c19hotline_event"], false, true),
            ([String](), false, false),
        ]
    )
    func roles(_ roles: [String], canTest: Bool, canEvent: Bool) async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: roles)
            let authority = try #require(harness.configuration.authorities.first)
            try await harness.browse { browser in
                let start = try await harness.signIn(browser, officer)
                #expect(start.has(id: "teletan-test") == canTest)
                #expect(start.has(id: "teletan-event") == canEvent)

                // A hand-made POST for what the page does not offer is refused before anything is claimed or called.
                if !canTest {
                    let reply = try await browser.post("/teletan", ["type": "TEST"])
                    #expect(reply.status == .forbidden)
                    _ = try await browser.get("/")
                }
                if !canEvent {
                    let reply = try await browser.post("/teletan", ["type": "EVENT", "authority": authority.id])
                    #expect(reply.status == .forbidden)
                    _ = try await browser.get("/")
                }
                let bogus = try await browser.post("/teletan", ["type": "PCR"])
                #expect(bogus.status == .badRequest)
            }
            #expect(await harness.issuer.calls.count == 0)
            #expect(try await harness.actions(of: "officer1").contains("teletan_issued") == false)
        }
    }

    @Test("the pages of an officer need a session: without one every page and POST leads to the login")
    func anonymous() async throws {
        try await PortalHarness.run { harness in
            try await harness.browse { browser in
                for path in ["/", "/password"] {
                    let reply = try await browser.get(path)
                    #expect(reply.status == .seeOther, "\(path)")
                    #expect(reply.location == "/login", "\(path)")
                }
                _ = try await browser.get("/login")
                let reply = try await browser.post("/teletan", ["type": "TEST"])
                #expect(reply.location == "/login")
            }
            #expect(await harness.issuer.calls.isEmpty)
        }
    }

    @Test("one teleTAN per officer per 30 s, also across two replicas sharing the database")
    func rateLimitAcrossReplicas() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.withReplica { replica in
                // The officer signs in on replica A and issues one.
                let session = try await harness.signedInCookie(officer) { browser async throws in
                    #expect(try await browser.post("/teletan", ["type": "TEST"]).status == .ok)
                }

                // Ten seconds later, with the same session, on replica B: the rate-limit page with the 20 s left.
                harness.clock.advance(by: 10)
                try await replica.test(.router) { client in
                    let browser = PortalBrowser(client: client, cookie: session)
                    #expect(try await browser.get("/").status == .ok)
                    let limited = try await browser.post("/teletan", ["type": "TEST"])
                    #expect(limited.status == .tooManyRequests)
                    #expect(limited.content(ofID: "rate-limited")?.isEmpty == false)
                    #expect(limited.text.contains("<strong>20</strong>"))
                    #expect(!limited.has(id: "teletan"))

                    // Once the interval has passed, B issues the next one.
                    harness.clock.advance(by: 20)
                    _ = try await browser.get("/")
                    #expect(try await browser.post("/teletan", ["type": "TEST"]).status == .ok)
                }
            }
            #expect(await harness.issuer.calls.count == 2)
        }
    }

    @Test("two replicas asked at the same moment issue exactly one teleTAN")
    func concurrentReplicas() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.withReplica { replica in
                let session = try await harness.signedInCookie(officer)
                // A second session of the same officer, logged in on replica B (every page renews a session's id, so two
                // browsers cannot share one).
                harness.clock.advance(by: 30)  // the next TOTP step: a used code cannot be replayed
                let second = try await harness.signedInCookie(officer, on: replica)

                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    group.addTask { try await PortalBrowser.reusing(session, on: harness.app) }
                    group.addTask { try await PortalBrowser.reusing(second, on: replica) }
                    return try await group.reduce(into: []) { $0.append($1) }
                }

                #expect(statuses.sorted { $0.code < $1.code } == [.ok, .tooManyRequests])
            }
            #expect(await harness.issuer.calls.count == 1)
        }
    }

    /// verification-service failing to issue a teleTAN, and the page the officer gets.
    struct UpstreamFailure: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let behaviour: InMemoryTeleTANClient.Behaviour
        let status: HTTPResponse.Status
        /// The key of the page's message in `PageTexts.english`.
        let message: String

        static let all = [
            UpstreamFailure(
                testDescription: "down (503)",
                behaviour: .unavailable,
                status: .serviceUnavailable,
                message: "unavailable"
            ),
            UpstreamFailure(
                testDescription: "at its global limit (429)",
                behaviour: .answer(.rateLimited),
                status: .tooManyRequests,
                message: "server_rate_limited"
            ),
        ]
    }

    @Test(
        "verification-service down or at its limit: its own page, nothing issued, and the officer's slot is given back",
        arguments: UpstreamFailure.all
    )
    func verificationFails(_ failure: UpstreamFailure) async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            await harness.issuer.behave(failure.behaviour)
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)

                let refused = try await browser.post("/teletan", ["type": "TEST"])
                #expect(refused.status == failure.status)
                #expect(refused.content(ofID: "error-message") == PageTexts.english[failure.message])
                #expect(!refused.has(id: "teletan"))
                #expect(!refused.has(id: "rate-limited"), "not the officer's own 30-second limit")

                // Back a second later: no 30-second wait, because nothing was issued.
                await harness.issuer.behave(.answer(.created(PortalHarness.teleTAN)))
                harness.clock.advance(by: 1)
                _ = try await browser.get("/")
                #expect(try await browser.post("/teletan", ["type": "TEST"]).status == .ok)
            }
            #expect(try await harness.actions(of: "officer1").filter { $0 == "teletan_issued" }.count == 1)
            let teleTANs = { (outcome: String) in
                try harness.metrics.expectCounter("en_portal_teletans_total", [("outcome", outcome)]).totalValue
            }
            #expect(try teleTANs("refused") == 1)
            #expect(try teleTANs("issued") == 1)
        }
    }

    @Test("verification-service down for real (nothing listens): the 503 page")
    func verificationUnreachable() async throws {
        // Port 9 (discard): nothing listens on loopback, so every connection attempt is refused.
        try await PortalHarness.run(
            ["VERIFICATION_INTERNAL_URL": "http://127.0.0.1:9", "VERIFICATION_RETRY_BACKOFF": "1ms"],
            realVerification: true
        ) { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
                let down = try await browser.post("/teletan", ["type": "TEST"])
                #expect(down.status == .serviceUnavailable)
                #expect(down.content(ofID: "error-message") == PageTexts.english["unavailable"])
            }
        }
    }

    // MARK: - Host allowlist

    @Test("only allowed Host values are served; X-Forwarded-Host is refused; probes pass with any Host")
    func hostAllowlist() async throws {
        try await PortalHarness.run { harness in
            // On a real socket: HummingbirdTesting's router client always sends the authority `localhost`.
            let client = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: .init(redirectConfiguration: .disallow)
            )
            try await withCleanup {
                try await LiveServer.run(harness.app) { port in
                    let allowed = PortalBrowser.live(port: port, client: client, host: "portal.test")
                    #expect(try await allowed.get("/login").status == .ok)

                    let foreign = PortalBrowser.live(port: port, client: client, host: "evil.example")
                    let refused = try await foreign.get("/login")
                    #expect(refused.status == .badRequest)
                    #expect(refused.setCookies.isEmpty)
                    #expect(
                        try await foreign.post("/login", ["username": "a", "password": "b"], csrf: .forged).status
                            == .badRequest
                    )

                    let forwarded = PortalBrowser.live(port: port, client: client, host: "portal.test")
                    forwarded.extraHeaders[PortalBrowser.forwardedHost] = "evil.example"
                    #expect(try await forwarded.get("/login").status == .badRequest)

                    let probe = PortalBrowser.live(port: port, client: client, host: "10.0.0.7:8004")
                    #expect(try await probe.get("/health/live").status == .ok)
                }
            } cleanup: {
                try await client.shutdown()
            }
            // Only the allowed login page made a session.
            #expect(try await harness.database.count("portal_session") == 1)
        }
    }

    @Test("the token carries the officer's roles, a 60-second lifetime and the key id the JWKS publishes")
    func tokenShape() throws {
        let key = P256.Signing.PrivateKey()
        let signer = PortalJWTSigner(key: key, keyID: "portal-7")
        let now = Date(timeIntervalSince1970: 1_700_000_000)

        let token = try signer.token(subject: "officer1", roles: ["c19hotline_event", "c19hotline"], now: now)

        let parts = token.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        let header =
            try JSONSerialization.jsonObject(with: Data(try #require(Base64URL.decode(parts[0])))) as? [String: Any]
        let claims =
            try JSONSerialization.jsonObject(with: Data(try #require(Base64URL.decode(parts[1])))) as? [String: Any]
        #expect(header?["alg"] as? String == "ES256")
        #expect(header?["kid"] as? String == "portal-7")
        #expect(claims?["sub"] as? String == "officer1")
        #expect(claims?["exp"] as? Int == 1_700_000_060)
        #expect(
            (claims?["realm_access"] as? [String: Any])?["roles"] as? [String] == ["c19hotline", "c19hotline_event"]
        )
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)))
        #expect(
            !P256.Signing.PrivateKey().publicKey.isValidSignature(
                signature,
                for: Data((parts[0] + "." + parts[1]).utf8)
            )
        )

        let jwks = try JSONSerialization.jsonObject(with: Data(signer.jwks.utf8)) as? [String: [[String: String]]]
        let jwk = try #require(jwks?["keys"]?.first)
        #expect(jwk["kid"] == "portal-7")
        let xText = try #require(jwk["x"])
        let yText = try #require(jwk["y"])
        let x = Data(try #require(Base64URL.decode(xText)))
        let y = Data(try #require(Base64URL.decode(yText)))
        #expect(x + y == key.publicKey.rawRepresentation)
    }
}

extension PortalBrowser {
    /// A TEST teleTAN through `app` with the session `cookie`: the start page (for its CSRF token), then the POST.
    static func reusing<App: ApplicationProtocol>(_ cookie: String, on app: App) async throws -> HTTPResponse.Status {
        try await app.test(.router) { client in
            let browser = PortalBrowser(client: client, cookie: cookie)
            let start = try await browser.get("/")
            try #require(start.status == .ok)
            return try await browser.post("/teletan", ["type": "TEST"]).status
        }
    }
}
