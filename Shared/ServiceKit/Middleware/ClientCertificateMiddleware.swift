// Admits only TLS clients whose certificate thumbprint is on an allowlist.

package import ENCrypto
package import Hummingbird
import Logging
import NIOCore
import NIOSSL

/// Guards routes that only known clients (labs) may call when the service terminates TLS itself.
///
/// The TLS layer already checked that a presented certificate chains to `TLS_CLIENT_CA_FILE`; this middleware
/// requires that a certificate was presented and that the SHA-256 of its DER is on the allowlist
/// (cwa-satellites §2.3). Otherwise 401. The thumbprint of an admitted lab is put into the log metadata
/// (a certificate fingerprint identifies the lab, not a person).
package struct ClientCertificateMiddleware<Context: ChannelRequestContext>: RouterMiddleware {
    private let allowlist: Set<CertificateThumbprint>

    package init(allowlist: Set<CertificateThumbprint>) {
        self.allowlist = allowlist
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // No TLS handler (plain HTTP) or no certificate presented: both mean "no certificate".
        let certificate = try? await context.channel.nioSSL_peerCertificate().get()
        guard let certificate else {
            throw APIError(.unauthorized, "a client certificate is required")
        }
        let thumbprint = CertificateThumbprint(derEncodedCertificate: try certificate.toDERBytes())
        guard self.allowlist.contains(thumbprint) else {
            throw APIError(.unauthorized, "client certificate is not allowed")
        }
        var context = context
        context.logger[metadataKey: "client.certificate.sha256"] = "\(thumbprint.hex)"
        return try await next(request, context)
    }
}
