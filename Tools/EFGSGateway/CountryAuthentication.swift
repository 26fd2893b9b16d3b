// Countries are who their authentication certificates say (cwa-satellites §5.1): the thumbprint and subject the TLS
// front forwards, or this server's own TLS handshake.

import ENCrypto
import ENFederation
import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOSSL
import SwiftASN1
import X509

/// The caller: a country, by the authentication certificate it presented.
struct CountryIdentity: Sendable, Equatable {
    var country: String
    var thumbprint: String
}

typealias CountryRequestContext = IdentifiedRequestContext<CountryIdentity>

/// Sets the caller's country, or refuses: 403 without the headers or with an unknown or revoked certificate, 400 for a
/// subject without `C` (as the reference). Behind the front, the headers are believed only with `X-Gateway-Secret`.
struct CountryAuthenticationMiddleware: RouterMiddleware {
    typealias Context = CountryRequestContext

    enum Source: Sendable {
        /// This server's TLS handshake, which checked the chain.
        case tls
        /// The TLS front that terminated mutual TLS, which proves itself with `secret`.
        case front(secret: String)
    }

    let store: GatewayStore
    let source: Source

    func handle(_ request: Request, context: Context, next: MiddlewareNext<Context>) async throws -> Response {
        let thumbprint: String
        let distinguishedName: String
        switch self.source {
        case .tls:
            guard let certificate = try? await context.channel.nioSSL_peerCertificate().get(),
                let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der)
            else { throw GatewayError(.forbidden, "a client certificate is required") }
            thumbprint = CertificateThumbprint(derEncodedCertificate: der).hex
            distinguishedName = parsed.subject.description
        case .front(let secret):
            guard ConstantTime.equals(request.headers[ClientCertificateMiddleware.gatewaySecretHeader] ?? "", secret)
            else {
                throw GatewayError(.forbidden, "requests must come through the TLS front")
            }
            guard let sha = request.headers[HTTPField.Name(FederationProtocol.clientThumbprintHeader)!],
                let dn = request.headers[HTTPField.Name(FederationProtocol.clientDNHeader)!],
                let parsed = Self.thumbprint(sha)
            else { throw GatewayError(.forbidden, "the client certificate headers are missing or malformed") }
            thumbprint = parsed
            distinguishedName = dn.removingPercentEncoding ?? dn
        }
        guard let country = Self.country(inDN: distinguishedName) else {
            throw GatewayError(.badRequest, "the client certificate's subject has no country")
        }
        guard let certificate = try await self.store.certificate(thumbprint: thumbprint, kind: .authentication),
            certificate.country == country, !certificate.revoked
        else { throw GatewayError(.forbidden, "the client certificate is not registered") }
        var context = context
        context.identity = CountryIdentity(country: country, thumbprint: thumbprint)
        context.logger[metadataKey: "country"] = "\(country)"
        return try await next(request, context)
    }

    /// 64 hex characters, or Base64 of the 32 raw bytes; either possibly URL-encoded. Lowercase hex, or `nil`.
    static func thumbprint(_ value: String) -> String? {
        let text = value.removingPercentEncoding ?? value
        if let hex = CertificateThumbprint(parsing: text) { return hex.hex }
        guard let raw = Data(base64Encoded: text), raw.count == 32 else { return nil }
        return raw.map { String(format: "%02x", $0) }.joined()
    }

    /// The `C` of a subject written `CN=…,O=…,C=DE` (keys in any case, any order).
    static func country(inDN dn: String) -> String? {
        for part in dn.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].uppercased() == "C", pair[1].count == 2 { return pair[1].uppercased() }
        }
        return nil
    }
}

/// An error of the gateway's API: its status and `{"message": …}`, as the reference answers.
struct GatewayError: HTTPResponseError {
    let status: HTTPResponse.Status
    let message: String
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = (try? JSONEncoder().encode(["message": self.message])) ?? Data()
        return Response(
            status: self.status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: body))
        )
    }
}
