// Admits only clients whose certificate thumbprint is on an allowlist: from this service's own TLS handshake, or
// from the gateway that terminated mutual TLS in front of it.

package import ENCrypto
import Foundation
package import HTTPTypes
package import Hummingbird
import Logging
import NIOCore
import NIOSSL

/// Guards routes that only known clients (labs) may call.
///
/// The TLS layer (ours or the gateway's) already checked that the certificate chains to the lab CA; this middleware
/// requires that a certificate was presented and that the SHA-256 of its DER is on the allowlist
/// (cwa-satellites §2.3). Otherwise 401. The thumbprint of an admitted lab is put into the log metadata
/// (a certificate fingerprint identifies the lab, not a person).
package struct ClientCertificateMiddleware<Context: ChannelRequestContext>: RouterMiddleware {
    /// Where the client certificate comes from.
    package enum Source: Sendable {
        /// The TLS handshake of this server.
        case tls
        /// A header set by the gateway that terminated mutual TLS: the verified certificate as URL-escaped PEM (nginx's
        /// `$ssl_client_escaped_cert`). The header is believed only when the request also carries `X-Gateway-Secret`
        /// equal to `secret`, so a client that reaches the service directly cannot claim to be a lab.
        case gateway(header: HTTPField.Name, secret: String)
    }

    /// The header that proves a request came through the gateway.
    package static var gatewaySecretHeader: HTTPField.Name { HTTPField.Name("X-Gateway-Secret")! }

    private let allowlist: Set<CertificateThumbprint>
    private let source: Source

    package init(allowlist: Set<CertificateThumbprint>, source: Source = .tls) {
        self.allowlist = allowlist
        self.source = source
    }

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        let thumbprint: CertificateThumbprint
        switch self.source {
        case .tls:
            // No TLS handler (plain HTTP) or no certificate presented: both mean "no certificate".
            guard let certificate = try? await context.channel.nioSSL_peerCertificate().get() else {
                throw APIError(.unauthorized, "a client certificate is required")
            }
            thumbprint = CertificateThumbprint(derEncodedCertificate: try certificate.toDERBytes())
        case .gateway(let header, let secret):
            guard ConstantTime.equals(request.headers[Self.gatewaySecretHeader] ?? "", secret) else {
                throw APIError(.unauthorized, "requests must come through the gateway")
            }
            guard let value = request.headers[header], let der = Self.derOfEscapedPEM(value) else {
                throw APIError(.unauthorized, "a client certificate is required")
            }
            thumbprint = CertificateThumbprint(derEncodedCertificate: der)
        }
        guard self.allowlist.contains(thumbprint) else {
            throw APIError(.unauthorized, "client certificate is not allowed")
        }
        var context = context
        context.logger[metadataKey: "client.certificate.sha256"] = "\(thumbprint.hex)"
        return try await next(request, context)
    }

    /// The DER bytes of one URL-escaped PEM certificate, or `nil` when the value is not exactly one certificate.
    package static func derOfEscapedPEM(_ value: String) -> [UInt8]? {
        guard let pem = value.removingPercentEncoding,
            let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)), certificates.count == 1
        else { return nil }
        return try? certificates[0].toDERBytes()
    }
}
