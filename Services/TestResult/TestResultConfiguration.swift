// Every setting of test-result-service, read and validated once.

import ENCrypto
import ENPersistence
import ENServiceKit
import Foundation
import HTTPTypes

/// The configuration of test-result-service.
struct TestResultConfiguration: ServiceConfiguration {
    /// Lab-facing port (behind the gateway's mTLS, or with TLS terminated here).
    var http: ListenAddress
    /// Port for verification-service's lookups; never routed by the gateway.
    var internalHTTP: ListenAddress
    var database: DatabaseConfiguration
    var logging: LoggingConfiguration
    /// Largest accepted request body.
    var maxBodyBytes: Int
    /// Most results in one batch upload.
    var maxResultsPerUpload: Int
    /// TLS terminated by the service itself; lab routes then require an allowlisted client certificate.
    var tls: ServerTLSConfiguration?
    /// Mutual TLS terminated by the gateway, which passes the verified lab certificate on `header` with the shared
    /// `secret`; lab routes then require that the certificate is allowlisted.
    var gateway: (header: HTTPField.Name, secret: String)?
    var labCertificateAllowlist: Set<CertificateThumbprint>
    var retention: RetentionPolicy

    /// Reads:
    /// - `HTTP_HOST` (127.0.0.1), `HTTP_PORT` (8003), `INTERNAL_HTTP_HOST` (127.0.0.1), `INTERNAL_HTTP_PORT` (8013)
    /// - `DATABASE_URL` (required, secret), `DATABASE_POOL_SIZE` (10), `DATABASE_AUTO_MIGRATE` (true),
    ///   `DATABASE_STATEMENT_TIMEOUT` (30s)
    /// - `LOG_LEVEL` (info), `LOG_FORMAT` (text)
    /// - `HTTP_MAX_BODY_SIZE` (1048576 bytes), `LAB_MAX_RESULTS_PER_UPLOAD` (5000)
    /// - `TLS_CERT_FILE`, `TLS_KEY_FILE`, `TLS_CLIENT_CA_FILE`, `LAB_CERT_SHA256_ALLOWLIST` (comma-separated)
    /// - `LAB_CERT_HEADER`, `GATEWAY_SECRET` (secret): the gateway's mutual TLS instead of our own
    /// - `RESULT_MASK_AFTER` (21d), `RESULT_DELETE_AFTER` (60d), `RETENTION_INTERVAL` (1h)
    ///
    /// Without TLS, here or at the gateway, the lab port must be a loopback address: then only the gateway on the same
    /// host can reach it.
    init(settings: SettingsReader) {
        self.http = ListenAddress(settings: settings, prefix: "HTTP", defaultPort: 8003, purpose: "lab API")
        self.internalHTTP = ListenAddress(
            settings: settings,
            prefix: "INTERNAL_HTTP",
            defaultPort: 8013,
            purpose: "internal API"
        )
        self.database = DatabaseConfiguration(settings: settings)
        self.logging = LoggingConfiguration(settings: settings)
        self.maxBodyBytes = settings.int(
            "HTTP_MAX_BODY_SIZE",
            default: 1_048_576,
            range: 1024...16_777_216,
            help: "Largest request body in bytes; larger ones get 413 before they are read."
        )
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
                "SHA-256 thumbprints (hex, of the DER) of lab client certificates admitted (TLS here or at the gateway)."
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
        self.labCertificateAllowlist = []
        for entry in allowlist {
            if let thumbprint = CertificateThumbprint(parsing: entry) {
                self.labCertificateAllowlist.insert(thumbprint)
            } else {
                settings.report(
                    "LAB_CERT_SHA256_ALLOWLIST",
                    "contains an entry that is not a SHA-256 thumbprint (64 hex characters)"
                )
            }
        }
        self.retention = RetentionPolicy(settings: settings)

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
            if let name, let gatewaySecret { self.gateway = (name, gatewaySecret) }
        } else if gatewaySecret != nil {
            settings.report("GATEWAY_SECRET", "is only used with LAB_CERT_HEADER")
        }
        let authenticatesLabs = self.tls != nil || gatewayHeader != nil
        if !authenticatesLabs && !self.http.isLoopback {
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
        self.internalHTTP.requireDistinctPort(from: self.http, settings: settings)
    }
}
