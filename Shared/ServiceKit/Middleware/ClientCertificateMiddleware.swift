// Admits only clients whose certificate is on an allowlist, and names them: from this service's own TLS handshake,
// or from the gateway that terminated mutual TLS in front of it.

package import ENCrypto
import Foundation
package import HTTPTypes
package import Hummingbird
import Logging
import NIOCore
import NIOSSL
import SwiftASN1
package import X509

/// A client that authenticated with a certificate: the name its allowlist entry gives it, and its thumbprint.
package struct CertificateIdentity: Sendable, Equatable {
    package let name: String
    package let thumbprint: CertificateThumbprint

    package init(name: String, thumbprint: CertificateThumbprint) {
        self.name = name
        self.thumbprint = thumbprint
    }
}

/// The request context of routes behind `ClientCertificateMiddleware`.
package typealias CertificateRequestContext = IdentifiedRequestContext<CertificateIdentity>

/// The certificates admitted, by SHA-256 thumbprint, each with the name of its holder.
package struct CertificateAllowlist: Sendable, Equatable {
    private var names: [CertificateThumbprint: String] = [:]

    package init() {}

    /// Entries `name=<thumbprint>`; an entry without a name is named by its thumbprint's hex. `nil` when an entry
    /// is malformed (an unparseable thumbprint, a name of control characters, `=` or more than 64 characters).
    package init?(entries: [String]) {
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard let thumbprint = CertificateThumbprint(parsing: parts.last ?? "") else { return nil }
            let name = parts.count == 2 ? parts[0].trimmingCharacters(in: .whitespaces) : thumbprint.hex
            guard (1...64).contains(name.unicodeScalars.count),
                name.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control && $0 != "," })
            else { return nil }
            self.names[thumbprint] = name
        }
    }

    package var isEmpty: Bool { self.names.isEmpty }
    package var thumbprints: [CertificateThumbprint] { Array(self.names.keys) }

    /// The identity of an admitted certificate, `nil` for any other.
    package func identity(of thumbprint: CertificateThumbprint) -> CertificateIdentity? {
        self.names[thumbprint].map { CertificateIdentity(name: $0, thumbprint: thumbprint) }
    }
}

/// Guards routes that only known clients (labs) may call, and sets the client's identity.
///
/// A certificate must be presented, must chain to the configured CA and be valid now, and the SHA-256 of its DER
/// must be on the allowlist (cwa-satellites §2.3); otherwise 401. With the service's own TLS the handshake checked
/// the chain; with the gateway's, the certificate arrives in a header and the chain is checked here again, so a
/// forged header with the gateway's secret still needs a certificate the lab CA signed. The name of an admitted lab
/// and its thumbprint are put into the log metadata (they identify a lab, not a person).
package struct ClientCertificateMiddleware: RouterMiddleware {
    package typealias Context = CertificateRequestContext

    /// Where the client certificate comes from.
    package enum Source: Sendable {
        /// The TLS handshake of this server, which verified the chain.
        case tls
        /// A header set by the gateway that terminated mutual TLS: the certificate as URL-escaped PEM (nginx's
        /// `$ssl_client_escaped_cert`). The header is believed only when the request also carries `X-Gateway-Secret`
        /// equal to `secret`, and the certificate only when it chains to one of `roots` and is valid now.
        case gateway(header: HTTPField.Name, secret: String, roots: [Certificate])
    }

    /// The header that proves a request came through the gateway.
    package static var gatewaySecretHeader: HTTPField.Name { HTTPField.Name("X-Gateway-Secret")! }

    /// Which of the certificates that authenticated are admitted.
    package enum Admission: Sendable {
        /// Those on the allowlist, by thumbprint (labs).
        case allowlist(CertificateAllowlist)
        /// Any whose subject's common name is exactly this (the federation gateway's callback certificate, whose
        /// chain the TLS handshake or the configured roots check).
        case commonName(String)
    }

    private let admission: Admission
    private let source: Source

    package init(allowlist: CertificateAllowlist, source: Source = .tls) {
        self.init(admission: .allowlist(allowlist), source: source)
    }

    package init(admission: Admission, source: Source = .tls) {
        self.admission = admission
        self.source = source
    }

    package func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        let der: [UInt8]
        switch self.source {
        case .tls:
            // No TLS handler (plain HTTP) or no certificate presented: both mean "no certificate".
            guard let certificate = try? await context.channel.nioSSL_peerCertificate().get() else {
                throw APIError(.unauthorized, "a client certificate is required")
            }
            der = try certificate.toDERBytes()
        case .gateway(let header, let secret, let roots):
            guard ConstantTime.equals(request.headers[Self.gatewaySecretHeader] ?? "", secret) else {
                throw APIError(.unauthorized, "requests must come through the gateway")
            }
            guard let value = request.headers[header], let escaped = Self.derOfEscapedPEM(value) else {
                throw APIError(.unauthorized, "a client certificate is required")
            }
            guard await Self.chains(escaped, to: roots) else {
                throw APIError(.unauthorized, "client certificate is not signed by a trusted CA or not valid now")
            }
            der = escaped
        }
        let thumbprint = CertificateThumbprint(derEncodedCertificate: der)
        let admitted: CertificateIdentity?
        switch self.admission {
        case .allowlist(let allowlist): admitted = allowlist.identity(of: thumbprint)
        case .commonName(let name):
            let commonName = (try? Certificate(derEncoded: der)).flatMap { certificate in
                certificate.subject.flatMap { $0 }.first { $0.type == .RDNAttributeType.commonName }
                    .flatMap { String($0.value) }
            }
            admitted = commonName == name ? CertificateIdentity(name: name, thumbprint: thumbprint) : nil
        }
        guard let identity = admitted else {
            throw APIError(.unauthorized, "client certificate is not allowed")
        }
        var context = context
        context.identity = identity
        context.logger[metadataKey: "client.certificate.sha256"] = "\(thumbprint.hex)"
        context.logger[metadataKey: "client.name"] = "\(identity.name)"
        return try await next(request, context)
    }

    /// Whether the certificate `der` chains to one of `roots` and is valid now (RFC 5280).
    package static func chains(_ der: [UInt8], to roots: [Certificate]) async -> Bool {
        guard let leaf = try? Certificate(derEncoded: der) else { return false }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) { RFC5280Policy() }
        if case .validCertificate = await verifier.validate(leaf: leaf, intermediates: CertificateStore()) {
            return true
        }
        return false
    }

    /// The DER bytes of one URL-escaped PEM certificate, or `nil` when the value is not exactly one certificate.
    package static func derOfEscapedPEM(_ value: String) -> [UInt8]? {
        guard let pem = value.removingPercentEncoding,
            let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)), certificates.count == 1
        else { return nil }
        return try? certificates[0].toDERBytes()
    }
}
