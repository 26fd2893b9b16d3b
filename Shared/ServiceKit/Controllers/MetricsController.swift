// `/metrics` in the Prometheus text format.

package import Hummingbird
package import Prometheus

/// Serves the registry the service's metrics factory writes to. With a readiness probe, each scrape first evaluates
/// readiness, so `en_service_ready` is as current as the scrape.
package struct MetricsController<Context: RequestContext>: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let readiness: ReadinessProbe?

    package init(registry: PrometheusCollectorRegistry, readiness: ReadinessProbe?) {
        self.registry = registry
        self.readiness = readiness
    }

    package func addRoutes(to router: Router<Context>) {
        router.get("/metrics") { _, context in
            await self.readiness?.evaluate(logger: context.logger)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: self.registry.emitToBuffer()))
            )
        }
    }
}
