// The portal's OpenAPI document and its router agree, and the document is served.

import ENTestSupport
import Foundation
import HTTPTypes
import Testing

@testable import PortalService

@Suite("Portal OpenAPI document", .postgres(PortalMigrations.group))
struct PortalOpenAPITests {
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Services/Portal/openapi.yaml")

    @Test("it documents exactly the machine API (the uploads, the JWKS, health, metrics, itself) and is served")
    func documentMatchesRoutes() async throws {
        let operations = try OpenAPIDocument.operations(in: Self.document).map { "\($0.method) \($0.path)" }
        #expect(
            Set(operations) == [
                "POST /upload/identified-risk-venues", "POST /upload/high-risk-postal-districts",
                "GET /.well-known/jwks.json", "GET /health/live", "GET /health/ready", "GET /metrics",
                "GET /openapi.yaml",
            ]
        )
        try await PortalHarness.run(["NHS_ENABLED": "true"]) { (harness: PortalHarness) async throws in
            let served = try await harness.app.get("/openapi.yaml")
            #expect(served.status == .ok)
            #expect(served.text == (try String(contentsOf: Self.document, encoding: .utf8)))
        }
    }
}
