// When the certificates a service loaded stop being valid, as a metric an alert can warn from.

import Foundation
package import Metrics
package import NIOSSL
import SwiftASN1
package import X509

/// `en_certificate_expiry_timestamp_seconds{certificate}`: the end of validity (`notValidAfter`, epoch seconds) of the
/// earliest-expiring certificate a service loaded under one name (`lab-ca`, `tls`, `federation-client`, …). Recorded
/// once, when the service is assembled: the files are read at start only, so a renewed certificate shows after a
/// restart, as it takes effect.
package enum CertificateExpiry {
    package static let gauge = "en_certificate_expiry_timestamp_seconds"

    package static func record(_ certificates: [Certificate], as name: String, factory: any MetricsFactory) {
        guard let earliest = certificates.map(\.notValidAfter).min() else { return }
        Gauge(label: self.gauge, dimensions: [("certificate", name)], factory: factory)
            .record(earliest.timeIntervalSince1970)
    }

    /// The same for certificates as NIOSSL loaded them; one that cannot be read as X.509 is left out.
    package static func record(_ certificates: [NIOSSLCertificate], as name: String, factory: any MetricsFactory) {
        let parsed = certificates.compactMap { certificate in
            (try? certificate.toDERBytes()).flatMap { try? Certificate(derEncoded: $0) }
        }
        self.record(parsed, as: name, factory: factory)
    }
}
