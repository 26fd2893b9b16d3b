// The test support's comparison of a router with an OpenAPI document: what every service's OpenAPI test relies on.

import ENServiceKit
import ENTestSupport
import Hummingbird
import Testing

@Suite("Routes against documents")
struct RouteDocumentTests {
    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("health/live") { _, _ in "ok" }
        router.post("v1/items/{id}") { _, _ in "ok" }
        return router
    }

    @Test("a router's operations are written as the documents write them, captures as {name}")
    func operations() {
        #expect(Self.router().operations == ["GET /health/live", "POST /v1/items/{id}"])
    }

    @Test("the comparison holds for exactly the documented operations, and records an issue for either surplus")
    func comparison() {
        let router = Self.router()
        router.expectMounts(exactly: ["GET /health/live", "POST /v1/items/{id}"])
        withKnownIssue("a mounted route the document lacks") {
            router.expectMounts(exactly: ["GET /health/live"])
        }
        withKnownIssue("a documented operation nothing mounts") {
            router.expectMounts(exactly: ["GET /health/live", "POST /v1/items/{id}", "GET /v1/items"])
        }
        withKnownIssue("an allowlisted route nothing mounts") {
            router.expectMounts(
                exactly: ["GET /health/live", "POST /v1/items/{id}"],
                allowlist: ServiceRoutes(["portal-service": ["POST /v1/create"]])
            )
        }
    }
}
