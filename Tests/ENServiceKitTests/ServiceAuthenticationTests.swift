// The internal ports' middleware: a valid service token, then the caller's route allowlist.

import Crypto
import ENCrypto
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@Suite("Service authentication")
struct ServiceAuthenticationTests {
    static let submission = ServiceTokenSigner(issuer: "submission-service", key: P256.Signing.PrivateKey())
    static let portal = ServiceTokenSigner(issuer: "portal-service", key: P256.Signing.PrivateKey())
    static let routes = ServiceRoutes([
        "submission-service": ["POST /v1/verify"],
        "portal-service": ["POST /v1/create"],
    ])

    static func app() throws -> some ApplicationProtocol {
        let verifier = ServiceTokenVerifier(
            audience: "verification-service",
            callers: [
                "submission-service": try #require(ServiceTokenVerifier.publicKeys(pem: Self.submission.publicKeyPEM)),
                "portal-service": try #require(ServiceTokenVerifier.publicKeys(pem: Self.portal.publicKeyPEM)),
            ]
        )
        let router = Router(context: ServiceRequestContext.self)
        router.addStandardMiddleware(maxBodyBytes: 1024, metricsFactory: ServiceEnvironment.testing().metricsFactory)
        router.get("/health/live") { _, _ in "ok" }
        let api = router.group("v1").add(
            middleware: ServiceAuthenticationMiddleware(verifier: verifier, routes: Self.routes)
        )
        api.post("verify") { _, _ in "verified" }
        api.post("create") { _, _ in "created" }
        return Application(router: router)
    }

    static func call(
        _ client: some TestClientProtocol,
        _ path: String,
        as signer: ServiceTokenSigner?,
        audience: String = "verification-service"
    ) async throws -> (HTTPResponse.Status, String) {
        var headers: HTTPFields = [:]
        if let signer {
            headers[.cwaServiceToken] = signer.token(audience: audience, now: Date())
        }
        let response = try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer())
        return (response.status, String(buffer: response.body))
    }

    @Test("each caller reaches its own routes only; no token, a bad token or another audience get 401")
    func allowlist() async throws {
        try await Self.app().test(.router) { client in
            let verified = try await Self.call(client, "/v1/verify", as: Self.submission)
            let created = try await Self.call(client, "/v1/create", as: Self.portal)
            let portalVerifying = try await Self.call(client, "/v1/verify", as: Self.portal)
            let submissionCreating = try await Self.call(client, "/v1/create", as: Self.submission)
            let anonymous = try await Self.call(client, "/v1/verify", as: nil)
            let elsewhere = try await Self.call(
                client,
                "/v1/verify",
                as: Self.submission,
                audience: "test-result-service"
            )
            let forged = try await client.execute(
                uri: "/v1/verify",
                method: .post,
                headers: [.cwaServiceToken: "eyJhbGciOiJub25lIn0.e30."],
                body: ByteBuffer()
            )
            let health = try await client.execute(uri: "/health/live", method: .get)

            #expect(verified.0 == .ok && verified.1 == "verified")
            #expect(created.0 == .ok && created.1 == "created")
            #expect(portalVerifying.0 == .forbidden)
            #expect(portalVerifying.1.contains("portal-service may not call POST /v1/verify"))
            #expect(submissionCreating.0 == .forbidden)
            #expect(anonymous.0 == .unauthorized)
            #expect(anonymous.1.contains("X-CWA-Service-Token"))
            #expect(elsewhere.0 == .unauthorized)
            #expect(forged.status == .unauthorized)
            #expect(health.status == .ok)
        }
    }

    @Test("SERVICE_CALLER_KEYS: callers outside the allowlist, unreadable files and bad entries are reported")
    func settings() throws {
        let good = TestServiceKeys.publicKeyFile("submission-service")
        let reader = SettingsReader(values: [
            "SERVICE_CALLER_KEYS": "submission-service=\(good),monitoring=\(good),portal-service=/nonexistent.pem,junk"
        ])
        let verifier = reader.serviceTokenVerifier(audience: "verification-service", routes: Self.routes)
        #expect(verifier.callerNames == ["submission-service"])
        #expect(reader.problems.count == 3)
        #expect(reader.problems.contains { $0.contains("'monitoring', which may call nothing here") })
        #expect(reader.problems.contains { $0.contains("/nonexistent.pem") })
        #expect(reader.problems.contains { $0.contains("caller=<file>") })

        let missing = SettingsReader(values: [:])
        _ = missing.serviceTokenVerifier(audience: "verification-service", routes: Self.routes)
        _ = missing.serviceTokenSigner(issuer: "submission-service")
        #expect(missing.problems.contains { $0.hasPrefix("SERVICE_CALLER_KEYS") })
        #expect(missing.problems.contains { $0.hasPrefix("SERVICE_TOKEN_KEY_FILE") })
    }
}
