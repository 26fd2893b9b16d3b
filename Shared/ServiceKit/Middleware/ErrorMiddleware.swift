// Turns every error into a response: client errors as `{"error": …}`, anything else as a bare, logged 500.

import ENPersistence
package import Hummingbird
package import HummingbirdCore
import Logging
package import Metrics

/// Outermost error boundary of a router.
///
/// - `APIError` renders itself; a domain error that is `APIErrorConvertible` renders its `apiError`.
/// - Hummingbird's own `HTTPError`s (unknown route, body too large, malformed JSON, …) become `APIError`s with
///   the same status, so every client error has the same shape.
/// - A `HTTPResponseError` of status 503 renders itself too: a dependency that is down, reported in the error's own
///   body.
/// - `DatabaseBusy` (every pooled connection stayed taken for the lease timeout) is load, not a bug: logged at
///   `warning`, counted in `en_db_pool_lease_timeouts_total` and answered 503 with `Retry-After`, so clients back off
///   instead of queueing.
/// - A database that went away (a connection refused or closed under the request, the server restarting; see
///   `isDatabaseUnavailable`) is an outage: logged at `warning` and answered 503 with `Retry-After: 5`.
/// - Anything else is a bug: logged at `error` with its type (PostgreSQL errors with their SQLSTATE), never with
///   request content, and answered with an empty 500.
package struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    private let metrics: any MetricsFactory

    /// `metrics` receives `en_db_pool_lease_timeouts_total` (nowhere by default), registered here at 0 so that
    /// `increase()` in `DatabasePoolSaturated` (deploy/observability/alerts.yaml) sees the first lease timeout.
    package init(metrics: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.metrics = metrics
        _ = Counter(label: DatabaseMetrics.leaseTimeouts, factory: metrics)
    }

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return try self.clientError(error, request: request, context: context)
        } catch let error as any APIErrorConvertible {
            return try self.clientError(error.apiError, request: request, context: context)
        } catch let error as HTTPError {
            let message = error.body ?? error.status.reasonPhrase
            return try self.clientError(
                APIError(error.status, message, headers: error.headers),
                request: request,
                context: context
            )
        } catch let error as any HTTPResponseError where error.status.code < 500 {
            context.logger.debug("Client error", metadata: ["http.response.status_code": "\(error.status.code)"])
            return try error.response(from: request, context: context)
        } catch let error as any HTTPResponseError where error.status == .serviceUnavailable {
            // A dependency is down and the error says so in its own body (with `Retry-After`); the cause was logged
            // where it was found.
            context.logger.warning("Request refused: dependency unavailable")
            return try error.response(from: request, context: context)
        } catch let error as DatabaseBusy {
            context.logger.warning("Request refused: database busy", metadata: ["error.message": "\(error)"])
            Counter(label: DatabaseMetrics.leaseTimeouts, factory: self.metrics).increment()
            return try APIError(.serviceUnavailable, "the service is busy; try again", headers: [.retryAfter: "1"])
                .response(from: request, context: context)
        } catch  where isDatabaseUnavailable(error) {
            context.logger.warning("Request refused: database unavailable", metadata: ErrorMetadata.of(error))
            return try APIError(
                .serviceUnavailable,
                "the service is unavailable; try again",
                headers: [.retryAfter: "5"]
            )
            .response(from: request, context: context)
        } catch {
            context.logger.error("Request failed", metadata: ErrorMetadata.of(error))
            return Response(status: .internalServerError)
        }
    }

    private func clientError(_ error: APIError, request: Request, context: Context) throws -> Response {
        if error.status.code >= 500 {
            context.logger.error(
                "Request failed",
                metadata: ["http.response.status_code": "\(error.status.code)", "error.message": "\(error.message)"]
            )
        } else {
            context.logger.debug(
                "Client error",
                metadata: ["http.response.status_code": "\(error.status.code)", "error.message": "\(error.message)"]
            )
        }
        return try error.response(from: request, context: context)
    }
}
