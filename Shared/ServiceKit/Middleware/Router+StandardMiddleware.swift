// The middleware stack every service router starts with.

package import Hummingbird
package import Metrics

extension Router {
    /// Adds, outermost first: request id, request log and metrics, the error boundary, the body-size limit.
    /// The order matters: the log and metrics see the final status of every request, including errors, and
    /// the error boundary also catches the 413 of the size limit.
    package func addStandardMiddleware(maxBodyBytes: Int, metricsFactory: any MetricsFactory) {
        self.add(middleware: RequestIDMiddleware())
        self.add(middleware: RequestObservabilityMiddleware(factory: metricsFactory))
        self.add(middleware: ErrorMiddleware())
        self.add(middleware: BodySizeLimitMiddleware(maxBytes: maxBodyBytes))
    }
}
