// The one choice between a plain listener and one that ends TLS itself.

package import HummingbirdCore
import HummingbirdTLS

extension HTTPServerBuilder {
    /// HTTP/1.1, behind TLS when `tls` is set (with client certificates when it names their authorities).
    package static func http1(tls: ServerTLSConfiguration?) throws -> HTTPServerBuilder {
        guard let tls else { return .http1() }
        return try .tls(.http1(), tlsConfiguration: tls.nioConfiguration)
    }
}
