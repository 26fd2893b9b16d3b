// Every setting of federation-service, read and validated once; certificates and keys are loaded here, so a missing
// or mismatched one stops the service before it talks to the gateway.

import ENCrypto
import ENFederation
import ENModels
import ENPersistence
import ENServiceKit
import Foundation
import HTTPTypes
import NIOSSL
import SwiftASN1
import X509

/// The configuration of federation-service.
struct FederationConfiguration: ServiceConfiguration {
    /// The port of the callback endpoint, health and metrics (serve mode), the database, the logging.
    var basics: ServiceBasics
    /// This backend's country: the origin of the keys it uploads, left out of what it stores.
    var ownCountry: String
    /// Base URL of the gateway's API.
    var gatewayURL: String
    var gatewayIdentity: GatewayClientIdentity
    var gatewayPolicy: UpstreamPolicy
    /// `nil` only when loading failed, which is reported and stops the service before it is used.
    var signer: BatchSigner?
    /// Trust anchors of the other countries' batch-signing certificates, each registered for its subject's country.
    var trustAnchors: [Certificate]

    /// The anchors with the country each speaks for.
    var batchTrustAnchors: [BatchTrustAnchor] {
        BatchTrustAnchor.registeredBySubject(self.trustAnchors) ?? []
    }
    var upload: UploadPolicy
    var download: DownloadPolicy
    var acceptance: KeyAcceptance
    var uploadInterval: Duration
    var downloadInterval: Duration
    /// `serve` only takes callbacks: no runs, and none of the gateway's credentials loaded (`upload` and `download`
    /// refuse to run). For deployments whose CronJobs run the uploads and downloads.
    var callbackOnly: Bool
    var callback: CallbackSettings

    /// Who may call the callback, and where it is registered.
    struct CallbackSettings: Sendable {
        /// The common name of the gateway's callback client certificate (`EFGS_CALLBACK_CERT_CN`).
        var commonName: String?
        /// TLS with client certificates terminated here.
        var tls: ServerTLSConfiguration?
        /// Mutual TLS terminated by our gateway, which passes the certificate in `header` with `secret`; the
        /// certificate must chain to `roots`.
        var gateway: (header: HTTPField.Name, secret: String, roots: [Certificate])?
        /// The URL registered with the gateway at start (`CALLBACK_URL`); unset: no registration.
        var url: String?
    }

    init(settings: SettingsReader) {
        self.basics = ServiceBasics(
            settings: settings,
            port: 8006,
            purpose: "callback, health and metrics (serve mode)"
        )
        self.ownCountry = settings.string(
            "FEDERATION_OWN_COUNTRY",
            default: "DE",
            help:
                "This backend's country (ISO 3166 alpha-2): the origin of its uploads; its own keys are not downloaded."
        )
        if !CountryCode.isValid(self.ownCountry) {
            settings.report("FEDERATION_OWN_COUNTRY", "is not an ISO 3166 alpha-2 country code")
        }
        self.gatewayURL = settings.httpURL(
            "EFGS_URL",
            default: "https://127.0.0.1:8091",
            help: "Base URL of the federation gateway's API (https, mutual TLS)."
        )
        self.callbackOnly = settings.bool(
            "FEDERATION_CALLBACK_ONLY",
            default: false,
            help:
                "true: serve only records the batches callbacks announce, for `federation-service download` runs (CronJobs); it runs nothing, reads none of the gateway's credentials (EFGS_CLIENT_*, EFGS_CA_FILE, FEDERATION_SIGNING_*, FEDERATION_TRUST_ANCHORS), and upload and download refuse to run."
        )
        self.gatewayIdentity =
            self.callbackOnly
            ? GatewayClientIdentity(
                tls: TLSConfiguration.makeClientConfiguration(),
                thumbprint: "",
                distinguishedName: ""
            )
            : Self.clientIdentity(settings: settings)
        var gatewayDefaults = UpstreamPolicy()
        gatewayDefaults.connectTimeout = .seconds(5)
        gatewayDefaults.readTimeout = .seconds(60)
        gatewayDefaults.backoff = .seconds(1)
        self.gatewayPolicy = UpstreamPolicy(
            settings: settings,
            prefix: "EFGS",
            peer: "the federation gateway",
            defaults: gatewayDefaults
        )

        if self.callbackOnly {
            self.signer = nil
        } else {
            let signingCertificate = settings.requiredString(
                "FEDERATION_SIGNING_CERT_FILE",
                help: "PEM certificate of this country's batch-signing key (registered with the gateway as SIGNING)."
            )
            let signingKey = settings.requiredString(
                "FEDERATION_SIGNING_KEY_FILE",
                help: "PEM private key (ECDSA or RSA) of FEDERATION_SIGNING_CERT_FILE."
            )
            do {
                self.signer = try BatchSigner(
                    certificatePEM: try String(contentsOfFile: signingCertificate, encoding: .utf8),
                    privateKeyPEM: try String(contentsOfFile: signingKey, encoding: .utf8)
                )
                if self.signer?.certificate.countryCode != self.ownCountry {
                    settings.report("FEDERATION_SIGNING_CERT_FILE", "its subject's C is not FEDERATION_OWN_COUNTRY")
                }
            } catch {
                if !signingCertificate.isEmpty { settings.report("FEDERATION_SIGNING_CERT_FILE", "\(error)") }
                self.signer = nil
            }
        }

        self.download = DownloadPolicy(settings: settings)
        self.trustAnchors = []
        if !self.callbackOnly {
            let anchorsFile = settings.optionalString(
                "FEDERATION_TRUST_ANCHORS",
                help:
                    "PEM file of the certificates (or their CAs) other countries sign batches with, each trusted for the country (C) of its subject; required when FEDERATION_VERIFY_SIGNATURES is true."
            )
            if let anchorsFile {
                if let text = try? String(contentsOfFile: anchorsFile, encoding: .utf8),
                    let anchors = try? Certificate.bundle(pem: text), !anchors.isEmpty
                {
                    self.trustAnchors = anchors
                    for (index, anchor) in anchors.enumerated()
                    where anchor.countryCode.map(CountryCode.isValid) != true {
                        settings.report(
                            "FEDERATION_TRUST_ANCHORS",
                            "certificate \(index + 1) of \(anchorsFile) names no country (C) in its subject: an anchor is trusted only for its subject's country"
                        )
                    }
                } else {
                    settings.report(
                        "FEDERATION_TRUST_ANCHORS",
                        "\(anchorsFile) is not a readable PEM file of certificates"
                    )
                }
            } else if self.download.verifySignatures {
                settings.report("FEDERATION_TRUST_ANCHORS", "is required while FEDERATION_VERIFY_SIGNATURES is true")
            }
        }
        self.upload = UploadPolicy(settings: settings)
        self.acceptance = KeyAcceptance()
        self.acceptance.ownCountry = self.ownCountry
        let reportTypes = settings.list(
            "FEDERATION_ALLOWED_REPORT_TYPES",
            help:
                "Report types of downloaded keys that are stored (default CONFIRMED_TEST,CONFIRMED_CLINICAL_DIAGNOSIS)."
        )
        if !reportTypes.isEmpty {
            let parsed = reportTypes.compactMap(ReportType.init(storageName:))
            if parsed.count != reportTypes.count {
                settings.report("FEDERATION_ALLOWED_REPORT_TYPES", "names a report type that does not exist")
            }
            self.acceptance.allowedReportTypes = Set(parsed)
        }
        self.acceptance.defaultTRL = settings.int(
            "DEFAULT_TRL",
            default: 1,
            range: 1...8,
            help: "Transmission risk level of a downloaded key whose DSOS the derivation map does not know."
        )
        self.uploadInterval = settings.duration(
            "FEDERATION_UPLOAD_INTERVAL",
            default: .seconds(300),
            minimum: .seconds(1),
            help: "Time between upload runs in serve mode; the first is at start."
        )
        self.downloadInterval = settings.duration(
            "FEDERATION_DOWNLOAD_INTERVAL",
            default: .seconds(300),
            minimum: .seconds(1),
            help: "Time between download runs in serve mode (a callback starts one at once)."
        )
        self.callback = Self.callbackSettings(settings: settings)
    }

    // MARK: - Parts

    /// The client certificate, its key and the gateway's CA: TLS settings, the thumbprint and the DN headers.
    private static func clientIdentity(settings: SettingsReader) -> GatewayClientIdentity {
        let certificateFile = settings.requiredString(
            "EFGS_CLIENT_CERT_FILE",
            help:
                "PEM client certificate this backend authenticates to the gateway with (registered as AUTHENTICATION)."
        )
        let keyFile = settings.requiredString("EFGS_CLIENT_KEY_FILE", help: "PEM private key of EFGS_CLIENT_CERT_FILE.")
        let caFile = settings.requiredString(
            "EFGS_CA_FILE",
            help: "PEM bundle of the CA(s) the gateway's server certificate chains to."
        )
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        var thumbprint = ""
        var distinguishedName = ""
        var chain: [NIOSSLCertificate] = []
        guard !certificateFile.isEmpty, !keyFile.isEmpty, !caFile.isEmpty else {
            return GatewayClientIdentity(tls: tls, thumbprint: thumbprint, distinguishedName: distinguishedName)
        }
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
            guard let leaf = chain.first else { throw GatewayProtocolError("no certificate") }
            let der = try leaf.toDERBytes()
            thumbprint = CertificateThumbprint(derEncodedCertificate: der).hex
            distinguishedName = try Certificate(derEncoded: der).subject.description
            tls.certificateChain = chain.map { .certificate($0) }
        } catch {
            settings.report("EFGS_CLIENT_CERT_FILE", "\(certificateFile) is not a readable PEM certificate")
        }
        do {
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
        } catch {
            settings.report("EFGS_CLIENT_KEY_FILE", "\(keyFile) is not a readable PEM private key")
        }
        let authorities = (try? NIOSSLCertificate.fromPEMFile(caFile)) ?? []
        if authorities.isEmpty {
            settings.report("EFGS_CA_FILE", "\(caFile) is not a readable PEM file of certificates")
        }
        tls.trustRoots = .file(caFile)
        var identity = GatewayClientIdentity(tls: tls, thumbprint: thumbprint, distinguishedName: distinguishedName)
        identity.certificates = chain
        identity.authorities = authorities
        return identity
    }

    private static func callbackSettings(settings: SettingsReader) -> CallbackSettings {
        var callback = CallbackSettings()
        callback.commonName = settings.optionalString(
            "EFGS_CALLBACK_CERT_CN",
            help:
                "Common name of the gateway's callback client certificate; unset: the callback endpoint is closed (404)."
        )
        callback.url = settings.optionalString(
            "CALLBACK_URL",
            help: "The https URL of this service's callback as the gateway reaches it; registered at start when set."
        )
        if let url = callback.url,
            URLComponents(string: url)?.scheme != "https" || URLComponents(string: url)?.query != nil
        {
            settings.report("CALLBACK_URL", "must be an https URL without a query")
        }
        callback.tls = ServerTLSConfiguration.read(settings: settings, requireClientCA: true)
        let header = settings.optionalString(
            "CALLBACK_CERT_HEADER",
            help: "Header in which our gateway passes the callback's verified client certificate (URL-escaped PEM)."
        )
        let secret = settings.optionalString(
            "GATEWAY_SECRET",
            secret: true,
            help: "Shared secret our gateway sends in X-Gateway-Secret; CALLBACK_CERT_HEADER is believed only with it."
        )
        let caFile = settings.optionalString(
            "CALLBACK_CA_FILE",
            help: "PEM file of the CA(s) the callback certificate chains to; required with CALLBACK_CERT_HEADER."
        )
        if let header {
            let name = HTTPField.Name(header)
            if name == nil { settings.report("CALLBACK_CERT_HEADER", "is not a valid header name") }
            if (secret ?? "").count < 32 {
                settings.report("GATEWAY_SECRET", "must have at least 32 characters when CALLBACK_CERT_HEADER is set")
            }
            if callback.tls != nil {
                settings.report("CALLBACK_CERT_HEADER", "cannot be combined with TLS_CERT_FILE")
            }
            var roots: [Certificate] = []
            if let caFile, let text = try? String(contentsOfFile: caFile, encoding: .utf8),
                let parsed = try? Certificate.bundle(pem: text), !parsed.isEmpty
            {
                roots = parsed
            } else {
                settings.report(
                    "CALLBACK_CA_FILE",
                    "is required with CALLBACK_CERT_HEADER and must be a PEM file of certificates"
                )
            }
            if let name, let secret, !roots.isEmpty { callback.gateway = (name, secret, roots) }
        } else {
            if secret != nil { settings.report("GATEWAY_SECRET", "is only used with CALLBACK_CERT_HEADER") }
            if caFile != nil { settings.report("CALLBACK_CA_FILE", "is only used with CALLBACK_CERT_HEADER") }
        }
        if callback.commonName != nil, callback.tls == nil, header == nil {
            settings.report(
                "EFGS_CALLBACK_CERT_CN",
                "needs the callback's certificate checked: set TLS_CERT_FILE/TLS_KEY_FILE/TLS_CLIENT_CA_FILE or CALLBACK_CERT_HEADER"
            )
        }
        return callback
    }
}
