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
        let item = InternalRoute(.post, "/v1", "items/{id}", callers: ["portal-service"])
        router.expectMounts(exactly: ["GET /health/live", "POST /v1/items/{id}"], internalRoutes: [item])
        withKnownIssue("a declared internal route nothing mounts") {
            router.expectMounts(
                exactly: ["GET /health/live", "POST /v1/items/{id}"],
                internalRoutes: [item, InternalRoute(.post, "/v1", "create", callers: ["portal-service"])]
            )
        }
        withKnownIssue("a mounted internal route without declared callers") {
            router.expectMounts(exactly: ["GET /health/live", "POST /v1/items/{id}"], internalRoutes: [])
        }
    }
}
