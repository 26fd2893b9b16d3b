// The rest of the chain, as every middleware receives it.

package import Hummingbird

/// What `RouterMiddleware.handle` calls to pass the request on: the next middleware, or the route.
package typealias MiddlewareNext<Context> = (Request, Context) async throws -> Response
