// `/metrics` in the Prometheus text format.

package import Hummingbird
package import Prometheus

/// Serves the registry the service's metrics factory writes to.
package struct MetricsController<Context: RequestContext>: Sendable {
    private let registry: PrometheusCollectorRegistry

    package init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    package func addRoutes(to router: Router<Context>) {
        router.get("/metrics") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: self.registry.emitToBuffer()))
            )
        }
    }
}
