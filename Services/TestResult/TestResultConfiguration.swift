// Every setting of test-result-service, read and validated once.

import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation
import HTTPTypes
import SwiftASN1
import X509

/// The configuration of test-result-service.
struct TestResultConfiguration: ServiceConfiguration {
    /// The lab-facing port (behind the gateway's mTLS, or with TLS terminated here), the database, the logging.
    var basics: ServiceBasics
    /// The port for verification-service's lookups (never routed by the gateway) and `/metrics` (default 9003).
    var listeners: InternalListeners
    /// Largest accepted request body.
    var maxBodyBytes: Int
    /// Most results in one batch upload.
    var maxResultsPerUpload: Int
    /// TLS terminated by the service itself; lab routes then require an allowlisted client certificate.
    var tls: ServerTLSConfiguration?
    /// Mutual TLS terminated by the gateway, which passes the lab certificate on `header` with the shared `secret`;
    /// lab routes then require that the certificate chains to one of `labCA` and is allowlisted.
    var gateway: (header: HTTPField.Name, secret: String, labCA: [Certificate])?
    /// The lab certificates admitted, each with the lab id its results are stored under.
    var labCertificateAllowlist: CertificateAllowlist
    var retention: RetentionPolicy
    /// Checks the service tokens of callers of the internal port (`SERVICE_CALLER_KEYS`).
    var callers: ServiceTokenVerifier
    /// The NHS test path (lab uploads by CTA token, the token API), when `NHS_ENABLED`.
    var nhs: NHSSettings?

    /// Reads:
    /// - `HTTP_HOST` (127.0.0.1), `HTTP_PORT` (8003), `INTERNAL_HTTP_HOST` (127.0.0.1), `INTERNAL_HTTP_PORT` (8013)
    /// - `DATABASE_URL` (required, secret), `DATABASE_POOL_SIZE` (10), `DATABASE_AUTO_MIGRATE` (true),
    ///   `DATABASE_STATEMENT_TIMEOUT` (30s), `DATABASE_LEASE_TIMEOUT` (2s)
    /// - `LOG_LEVEL` (info), `LOG_FORMAT` (text)
    /// - `HTTP_MAX_BODY_SIZE` (1048576 bytes), `LAB_MAX_RESULTS_PER_UPLOAD` (5000)
    /// - `TLS_CERT_FILE`, `TLS_KEY_FILE`, `TLS_CLIENT_CA_FILE`, `LAB_CERT_SHA256_ALLOWLIST` (comma-separated
    ///   `lab id=thumbprint`; a bare thumbprint names the lab by itself)
    /// - `LAB_CERT_HEADER`, `GATEWAY_SECRET` (secret), `LAB_CA_FILE`: the gateway's mutual TLS instead of our own
    /// - `SERVICE_CALLER_KEYS` (required): `caller=<PEM public key file>` of the services that call the internal API
    /// - `RESULT_MASK_AFTER` (21d), `RESULT_DELETE_AFTER` (60d), `RETENTION_INTERVAL` (1h)
    /// - `NHS_ENABLED` (false), `NHS_MAINTENANCE_MODE` (false), `NHS_CTA_PEPPER_FILE` (required with NHS_ENABLED)
    ///
    /// Without TLS, here or at the gateway, the lab port must be a loopback address: then only the gateway on the same
    /// host can reach it.
    init(settings: SettingsReader) {
        self.basics = ServiceBasics(settings: settings, port: 8003, purpose: "lab API")
        self.listeners = InternalListeners(
            settings: settings,
            beside: self.basics.http,
            internalPort: 8013,
            metricsPort: 9003
        )
        self.callers = settings.serviceTokenVerifier(audience: "test-result-service", routes: InternalController.routes)
        self.maxBodyBytes = settings.maxBodySize(default: 1_048_576, range: 1024...16_777_216)
        self.maxResultsPerUpload = settings.int(
            "LAB_MAX_RESULTS_PER_UPLOAD",
            default: 5000,
            range: 1...100_000,
            help: "Most results a lab may send in one batch."
        )
        self.tls = ServerTLSConfiguration.read(settings: settings, requireClientCA: true)
        let allowlist = settings.list(
            "LAB_CERT_SHA256_ALLOWLIST",
            help:
                "Lab client certificates admitted, as lab id=SHA-256 thumbprint (hex, of the DER); results are stored "
                + "under the lab id (a bare thumbprint is its own lab id)."
        )
        let gatewayHeader = settings.optionalString(
            "LAB_CERT_HEADER",
            help:
                "Header in which the gateway passes the lab's verified client certificate (URL-escaped PEM), e.g. X-SSL-Client-Cert."
        )
        let gatewaySecret = settings.optionalString(
            "GATEWAY_SECRET",
            secret: true,
            help: "Shared secret the gateway sends in X-Gateway-Secret; LAB_CERT_HEADER is believed only with it."
        )
        if let parsed = CertificateAllowlist(entries: allowlist) {
            self.labCertificateAllowlist = parsed
        } else {
            self.labCertificateAllowlist = CertificateAllowlist()
            settings.report(
                "LAB_CERT_SHA256_ALLOWLIST",
                "contains an entry that is not [lab id=]thumbprint (64 hex characters; a lab id of 1-64 characters)"
            )
        }
        let labCAFile = settings.optionalString(
            "LAB_CA_FILE",
            help: "PEM file of the CA(s) lab certificates chain to; required with LAB_CERT_HEADER."
        )
        self.retention = RetentionPolicy(settings: settings)
        self.nhs = NHSSettings.read(settings: settings, signs: false, storesCTATokens: true)

        self.gateway = nil
        if let gatewayHeader {
            let name = HTTPField.Name(gatewayHeader)
            if name == nil { settings.report("LAB_CERT_HEADER", "is not a valid header name") }
            if (gatewaySecret ?? "").count < 32 {
                settings.report("GATEWAY_SECRET", "must have at least 32 characters when LAB_CERT_HEADER is set")
            }
            if self.tls != nil {
                settings.report(
                    "LAB_CERT_HEADER",
                    "cannot be combined with TLS_CERT_FILE: mutual TLS ends either here or at the gateway"
                )
            }
            let labCA = Self.certificates(file: labCAFile, settings: settings)
            if let name, let gatewaySecret, !labCA.isEmpty { self.gateway = (name, gatewaySecret, labCA) }
        } else {
            if gatewaySecret != nil { settings.report("GATEWAY_SECRET", "is only used with LAB_CERT_HEADER") }
            if labCAFile != nil { settings.report("LAB_CA_FILE", "is only used with LAB_CERT_HEADER") }
        }
        let authenticatesLabs = self.tls != nil || gatewayHeader != nil
        if !authenticatesLabs && !self.basics.http.isLoopback {
            settings.report(
                "HTTP_HOST",
                "must be a loopback address unless TLS_CERT_FILE/TLS_KEY_FILE/TLS_CLIENT_CA_FILE or LAB_CERT_HEADER are set"
            )
        }
        if authenticatesLabs && self.labCertificateAllowlist.isEmpty {
            settings.report(
                "LAB_CERT_SHA256_ALLOWLIST",
                "must name at least one certificate when labs authenticate with certificates"
            )
        }
    }

    /// The certificates of a PEM file; a problem naming `LAB_CA_FILE` is reported when there are none.
    private static func certificates(file: String?, settings: SettingsReader) -> [Certificate] {
        guard let file else {
            settings.report(
                "LAB_CA_FILE",
                "is required with LAB_CERT_HEADER: the gateway's lab certificates are checked"
            )
            return []
        }
        guard let text = try? String(contentsOfFile: file, encoding: .utf8),
            let documents = try? PEMDocument.parseMultiple(pemString: text),
            let certificates = try? documents.map({ try Certificate(pemDocument: $0) }),
            !certificates.isEmpty
        else {
            settings.report("LAB_CA_FILE", "\(file) is not a readable PEM file of certificates")
            return []
        }
        return certificates
    }
}
