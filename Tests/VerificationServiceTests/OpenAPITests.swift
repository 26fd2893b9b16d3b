// Each port's OpenAPI document and its router agree.

import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import VerificationService

@Suite("OpenAPI documents", .postgres(VerificationMigrations.group))
struct OpenAPITests {
    /// `METHOD /path` of every operation the document lists.
    static func operations(in resource: String) throws -> [String] {
        let url = try #require(Bundle.module.url(forResource: resource, withExtension: "yaml") ?? Self.source(resource))
        return try OpenAPIDocument.operations(in: url).map { "\($0.method) \($0.path)" }
    }

    private static func source(_ resource: String) -> URL? {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Services/Verification/\(resource).yaml")
    }

    /// Whether `operation` reaches a handler (anything but 404/405) on `app`.
    private static func isRouted(_ operation: String, on app: some ApplicationProtocol) async throws -> Bool {
        let parts = operation.split(separator: " ")
        let method = HTTPRequest.Method(rawValue: String(parts[0]))!
        let status = try await app.test(.router) { client in
            try await client.execute(
                // A templated path is probed with values: `{kind}` a kind, `{token}` any token.
                uri: String(parts[1]).replacingOccurrences(of: "{kind}", with: "venue")
                    .replacingOccurrences(of: "{token}", with: "probe"),
                method: method,
                headers: .json,
                body: method == .post ? ByteBuffer(string: "{}") : nil
            ).status
        }
        return status != .notFound && status != .methodNotAllowed
    }

    /// The NHS family's app routes (mounted with `NHS_ENABLED`).
    static let nhsRoutes = [
        "POST /virology-test/v2/order", "POST /virology-test/v2/results", "POST /virology-test/v2/cta-exchange",
        "POST /virology-test/home-kit/order", "POST /virology-test/home-kit/register", "POST /virology-test/results",
        "POST /virology-test/cta-exchange", "POST /isolation-payment/ipc-token/create",
        "POST /isolation-payment/ipc-token/update", "POST /isolation-payment/ipc-token/verify-token",
        "POST /isolation-payment/ipc-token/consume-token", "POST /circuit-breaker/exposure-notification/request",
        "POST /circuit-breaker/venue/request", "GET /circuit-breaker/{kind}/resolution/{token}",
    ]

    @Test("every documented operation is routed on its own port only, and every route of ours is documented")
    func documentsMatchRouters() async throws {
        // On PostgreSQL with the NHS path enabled, so its routes are mounted too.
        let database = try PostgresTestDatabase.require()
        let runtime = VerificationFixture.runtime(
            client: database.client,
            configuration: try VerificationFixture.configuration(TestNHS.settings()),
            logger: database.logger
        )
        try await withCleanup {
            try await Self.checkDocuments(runtime)
        } cleanup: {
            try await runtime.dependencies.shutdown()
        }
    }

    /// The internal port's routes, as declared with their callers.
    static let internalRoutes = InternalController.table.map(\.description)

    private static func checkDocuments(_ runtime: VerificationRuntime) async throws {
        let external = Application(router: try Verification.buildPublicRouter(runtime))
        let internalApp = Application(router: try Verification.buildInternalRouter(runtime))
        let documented = (
            external: try Self.operations(in: "openapi"), internal: try Self.operations(in: "openapi-internal")
        )
        let apiRoutes =
            [
                "POST /version/v1/registrationToken", "POST /version/v1/testresult", "POST /version/v1/tan",
            ] + Self.nhsRoutes + Self.internalRoutes
        let common = ["GET /health/live", "GET /health/ready", "GET /metrics", "GET /openapi.yaml"]

        #expect(
            Set(documented.external)
                == Set(
                    common + [
                        "POST /version/v1/registrationToken", "POST /version/v1/testresult", "POST /version/v1/tan",
                    ] + Self.nhsRoutes
                )
        )
        #expect(
            Set(documented.internal) == Set(common + Self.internalRoutes)
        )
        for operation in apiRoutes {
            #expect(
                try await Self.isRouted(operation, on: external) == documented.external.contains(operation),
                "\(operation) on the app port"
            )
            #expect(
                try await Self.isRouted(operation, on: internalApp) == documented.internal.contains(operation),
                "\(operation) on the internal port"
            )
        }
    }

    /// The documented operations as the router mounts them: `{kind}` is one route per circuit-breaker kind, and the
    /// resolution poll has a sibling without its token, which the document gives as that operation's 422.
    static func asMounted(_ operations: [String]) -> Set<String> {
        Set(
            operations.flatMap { operation -> [String] in
                guard operation.contains("{kind}") else { return [operation] }
                return NHSCircuitBreakerKind.allCases.flatMap { kind -> [String] in
                    let concrete = operation.replacingOccurrences(of: "{kind}", with: kind.rawValue)
                    let tokenless = concrete.replacingOccurrences(of: "/resolution/{token}", with: "/resolution")
                    return tokenless == concrete ? [concrete] : [concrete, tokenless]
                }
            }
        )
    }

    @Test("each router mounts exactly the operations its document lists, NHS routes included, on in-memory storage")
    func routersMatchDocuments() throws {
        let runtime = try VerificationFixture.inMemoryRuntime(TestNHS.settings())
        let documented = (
            external: Self.asMounted(try Self.operations(in: "openapi")),
            internal: Self.asMounted(try Self.operations(in: "openapi-internal"))
        )
        try Verification.buildPublicRouter(runtime).expectMounts(exactly: documented.external)
        try Verification.buildInternalRouter(runtime).expectMounts(
            exactly: documented.internal,
            internalRoutes: InternalController.table
        )
    }

    @Test("each port serves its own document at /openapi.yaml")
    func servesDocuments() async throws {
        let runtime = try VerificationFixture.inMemoryRuntime()
        let external = try await Application(router: try Verification.buildPublicRouter(runtime)).test(.router) {
            client in
            try await client.execute(uri: "/openapi.yaml", method: .get).body.text
        }
        let internalDocument = try await Application(router: try Verification.buildInternalRouter(runtime)).test(
            .router
        ) { client in
            try await client.execute(uri: "/openapi.yaml", method: .get).body.text
        }

        #expect(external.hasPrefix("openapi: 3.1"))
        #expect(external.contains("/version/v1/registrationToken"))
        #expect(internalDocument.contains("/version/v1/tan/verify"))
        #expect(internalDocument.contains("/version/v1/tan/teletan"))
    }
}
