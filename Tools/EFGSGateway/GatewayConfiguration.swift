// Every setting of efgs-gateway, read and validated once.

import ENPersistence
import ENServiceKit
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The rules of the gateway's API.
struct GatewaySettings: Sendable {
    /// Downloads of days older than this answer 410 (`max-age-in-days`, 2).
    var maximumAgeDays = 2
    /// Keys older than this many days (from the start of today) are deleted.
    var retentionDays = 2
    /// Most keys in one download batch (`doclimit`, 5000).
    var downloadBatchKeys = 5000
    /// Accept callback URLs on private and loopback addresses (rehearsals on one machine only).
    var allowPrivateCallbacks = false
    /// Largest upload body.
    var maximumBodyBytes = 4 * 1024 * 1024
}

struct GatewayConfiguration: ServiceConfiguration {
    /// The gateway API's port, the database, the logging.
    var basics: ServiceBasics
    var settings: GatewaySettings
    /// TLS with client certificates terminated here.
    var tls: ServerTLSConfiguration?
    /// The secret the TLS front sends with the certificate headers.
    var frontSecret: String?
    var batchInterval: Duration
    var callbackInterval: Duration
    var callbackRetryWait: Duration
    var callbackMaximumAttempts: Int
    var callbackTimeout: Duration
    /// The client certificate the gateway presents to national callbacks, and the CAs of their servers.
    var callbackTLS: TLSConfiguration
    /// The certificate whose key signs the certificate rows; `nil`: rows are checked without signatures.
    var trustAnchor: Certificate?

    init(settings: SettingsReader) {
        self.basics = ServiceBasics(settings: settings, port: 8090, purpose: "gateway API")
        var rules = GatewaySettings()
        rules.maximumAgeDays = settings.int(
            "EFGS_MAX_AGE_DAYS",
            default: rules.maximumAgeDays,
            range: 0...14,
            help: "Downloads of days older than this answer 410."
        )
        rules.retentionDays = settings.int(
            "EFGS_RETENTION_DAYS",
            default: rules.retentionDays,
            range: 1...14,
            help: "Keys are deleted this many days after the start of the day they arrived."
        )
        rules.downloadBatchKeys = settings.int(
            "EFGS_DOWNLOAD_BATCH_KEYS",
            default: rules.downloadBatchKeys,
            range: 1...100_000,
            help: "Most keys in one download batch (whole upload batches only)."
        )
        rules.allowPrivateCallbacks = settings.bool(
            "EFGS_CALLBACK_ALLOW_PRIVATE",
            default: false,
            help: "Accept callback URLs on private and loopback addresses (rehearsals on one machine only)."
        )
        self.settings = rules
        self.tls = ServerTLSConfiguration.read(settings: settings, requireClientCA: true)
        self.frontSecret = settings.optionalString(
            "GATEWAY_SECRET",
            secret: true,
            help: "Secret the TLS front sends in X-Gateway-Secret with X-SSL-Client-SHA256 and X-SSL-Client-DN."
        )
        switch (self.tls, self.frontSecret) {
        case (nil, nil):
            settings.report(
                "GATEWAY_SECRET",
                "or TLS_CERT_FILE/TLS_KEY_FILE/TLS_CLIENT_CA_FILE is required: countries authenticate by certificate"
            )
        case (.some, .some):
            settings.report(
                "GATEWAY_SECRET",
                "cannot be combined with TLS_CERT_FILE: mutual TLS ends either here or at the front"
            )
        case (nil, .some(let secret)) where secret.count < 32:
            settings.report("GATEWAY_SECRET", "must have at least 32 characters")
        default: break
        }
        self.batchInterval = settings.duration(
            "EFGS_BATCH_INTERVAL",
            default: .seconds(300),
            minimum: .milliseconds(100),
            help: "Time between the passes that form download batches (and apply retention)."
        )
        self.callbackInterval = settings.duration(
            "EFGS_CALLBACK_INTERVAL",
            default: .seconds(300),
            minimum: .milliseconds(100),
            help: "Time between the passes that deliver callbacks."
        )
        self.callbackRetryWait = settings.duration(
            "EFGS_CALLBACK_RETRY_WAIT",
            default: .seconds(300),
            help: "A failed callback is tried again after this long."
        )
        self.callbackMaximumAttempts = settings.int(
            "EFGS_CALLBACK_MAX_RETRIES",
            default: 5,
            range: 1...100,
            help: "After this many failed deliveries the subscription is deleted."
        )
        self.callbackTimeout = settings.duration(
            "EFGS_CALLBACK_TIMEOUT",
            default: .seconds(10),
            help: "Timeout of one callback request."
        )
        var callbackTLS = TLSConfiguration.makeClientConfiguration()
        callbackTLS.minimumTLSVersion = .tlsv12
        let clientCertificate = settings.optionalString(
            "EFGS_CALLBACK_CLIENT_CERT_FILE",
            help: "PEM client certificate presented to national callback endpoints."
        )
        let clientKey = settings.optionalString(
            "EFGS_CALLBACK_CLIENT_KEY_FILE",
            help: "PEM private key of EFGS_CALLBACK_CLIENT_CERT_FILE."
        )
        let serverCA = settings.optionalString(
            "EFGS_CALLBACK_CA_FILE",
            help: "PEM bundle of the CAs of national callback servers (default: the system's)."
        )
        if let clientCertificate, let clientKey {
            do {
                callbackTLS.certificateChain = try NIOSSLCertificate.fromPEMFile(clientCertificate).map {
                    .certificate($0)
                }
                callbackTLS.privateKey = .privateKey(try NIOSSLPrivateKey(file: clientKey, format: .pem))
            } catch {
                settings.report("EFGS_CALLBACK_CLIENT_CERT_FILE", "the certificate or its key is not readable PEM")
            }
        } else if clientCertificate != nil || clientKey != nil {
            settings.report("EFGS_CALLBACK_CLIENT_CERT_FILE", "and EFGS_CALLBACK_CLIENT_KEY_FILE go together")
        }
        if let serverCA {
            if (try? NIOSSLCertificate.fromPEMFile(serverCA))?.isEmpty ?? true {
                settings.report("EFGS_CALLBACK_CA_FILE", "\(serverCA) is not a readable PEM file of certificates")
            }
            callbackTLS.trustRoots = .file(serverCA)
        }
        self.callbackTLS = callbackTLS
        self.trustAnchor = Self.trustAnchor(settings: settings)
    }

    /// `EFGS_TRUST_ANCHOR_FILE`, read and parsed (shared with `country`).
    static func trustAnchor(settings: SettingsReader) -> Certificate? {
        guard
            let file = settings.optionalString(
                "EFGS_TRUST_ANCHOR_FILE",
                help:
                    "PEM certificate of the trust anchor: every certificate row must carry its signature (`country add --trust-anchor-cert/--trust-anchor-key`); unset: rows are only checked against their thumbprints."
            )
        else { return nil }
        guard let pem = try? String(contentsOfFile: file, encoding: .utf8),
            let certificate = try? Certificate(pemEncoded: pem)
        else {
            settings.report("EFGS_TRUST_ANCHOR_FILE", "\(file) is not a readable PEM certificate")
            return nil
        }
        return certificate
    }
}
