// The integrity of the certificate table (cwa-satellites §5.1): every row is checked when it is looked up, so a row
// changed in the database without the trust anchor's key is not believed.

import ENCrypto
import ENFederation
import Foundation
import SwiftASN1
import X509

/// The check of a certificate row: its PEM is one certificate, the SHA-256 of its DER is the row's thumbprint, and,
/// with a trust anchor, the row's operator signature verifies: a detached CMS signature over that DER by the trust
/// anchor's certificate (the gateway operator's key, kept apart from the gateway). Without a trust anchor only the
/// first two are checked.
struct CertificateIntegrity: Sendable {
    var trustAnchor: Certificate?

    init(trustAnchor: Certificate? = nil) {
        self.trustAnchor = trustAnchor
    }

    func holds(for row: CountryCertificate, at time: Date = Date()) async -> Bool {
        guard let certificate = try? Certificate(pemEncoded: row.pem), let der = try? certificate.derEncoded(),
            CertificateThumbprint(derEncodedCertificate: der).hex == row.thumbprint
        else { return false }
        guard let trustAnchor else { return true }
        guard let signature = row.signature else { return false }
        let result = await DetachedSignatureVerifier(roots: [trustAnchor])
            .verify(signature: signature, content: der, at: time)
        return (try? result.get()) == trustAnchor
    }
}

extension BatchSigner {
    /// The trust anchor's signature of a certificate row (`country add --trust-anchor-cert/-key`), made with the
    /// anchor's certificate and key: Base64 of a detached CMS signature over the DER of the certificate in `pem`.
    func signature(ofCertificatePEM pem: String, at time: Date = Date()) throws -> String {
        try self.sign(try Certificate(pemEncoded: pem).derEncoded(), at: time)
    }
}
