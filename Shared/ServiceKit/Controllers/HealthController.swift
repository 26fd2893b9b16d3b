// `/health/live` and `/health/ready`, for orchestrators and `make run`.

import Foundation
package import Hummingbird
import Logging

/// Liveness says the process serves HTTP; readiness also checks every dependency (`ReadinessProbe`).
package struct HealthController<Context: RequestContext>: Sendable {
    private let probe: ReadinessProbe

    package init(probe: ReadinessProbe) {
        self.probe = probe
    }

    package func addRoutes(to router: Router<Context>) {
        let live = Self.json(.ok, ["status": "up"])
        router.get("/health/live") { _, _ in live }
        router.get("/health/ready") { _, context in await self.ready(logger: context.logger) }
    }

    /// GET /health/ready — 200 when every check passes, else 503; the body names each check's state.
    private func ready(logger: Logger) async -> Response {
        let verdicts = await self.probe.evaluate(logger: logger)
        let up = verdicts.values.allSatisfy { $0 }
        var body: [String: String] = ["status": up ? "up" : "down"]
        for (name, verdict) in verdicts { body["check.\(name)"] = verdict ? "up" : "down" }
        return Self.json(up ? .ok : .serviceUnavailable, body)
    }

    private static func json(_ status: HTTPResponse.Status, _ body: [String: String]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
        return Response(
            status: status,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}
