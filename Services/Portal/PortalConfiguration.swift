// Every setting of portal-service, read and validated once; the signing key and the health authorities are loaded
// here, so a bad file stops the service at start-up.

import Crypto
import ENCrypto
import ENPersistence
import ENServiceKit
import Foundation

/// The configuration of portal-service.
struct PortalConfiguration: ServiceConfiguration {
    /// The officers' web portal's port, the database, the logging.
    var basics: ServiceBasics
    /// `/metrics` alone, for the monitoring network policy (`METRICS_HOST`, `METRICS_PORT`, default 9004).
    var metrics: ListenAddress
    var verificationURL: String
    /// `NHS_ENABLED`: the risky venues' upload (API key `highRiskVenuesCodeUpload`), published through
    /// distribution-service's internal port (`DISTRIBUTION_INTERNAL_URL`).
    var nhsEnabled: Bool
    var distributionURL: String
    var upstream: UpstreamPolicy
    /// Signs the service tokens of calls to verification-service (`SERVICE_TOKEN_KEY_FILE`).
    var serviceToken: ServiceTokenSigner
    var policy: PortalPolicy
    var signer: PortalJWTSigner
    /// The keys the officers' TOTP secrets are sealed with (AES-256-GCM): the first seals, every one opens.
    var totpKeys: KeyRing
    /// `Host` values the portal answers to (`PORTAL_ALLOWED_HOSTS`).
    var allowedHosts: Set<String>
    /// Mark the session cookie `Secure` (behind TLS).
    var secureCookies: Bool
    var authorities: [HealthAuthority]

    /// Reads:
    /// - `HTTP_HOST` (127.0.0.1), `HTTP_PORT` (8004), `DATABASE_URL` (the `portal` database) and the common settings
    /// - `VERIFICATION_INTERNAL_URL` (http://127.0.0.1:8012) and its `VERIFICATION_*` timeouts
    /// - `SERVICE_TOKEN_KEY_FILE` (required): PEM P-256 private key of this service's calls to verification-service
    /// - `PORTAL_JWT_KEY_FILE` (required: PEM P-256 private key), `PORTAL_JWT_KEY_ID` (portal-1)
    /// - `TOTP_KEY_FILE` (required: a key file, `id=base64:<key>` per line, keys of exactly 32 bytes)
    /// - `PORTAL_ALLOWED_HOSTS` (127.0.0.1:8004,localhost:8004), `PORTAL_SECURE_COOKIES` (false)
    /// - `HEALTH_AUTHORITIES_FILE` (the bundled list), and the limits of `PortalPolicy`
    init(settings: SettingsReader) {
        self.basics = ServiceBasics(settings: settings, port: 8004, purpose: "officers' web portal")
        self.metrics = MetricsListener.address(
            settings: settings,
            defaultPort: 9004,
            otherListeners: [self.basics.http]
        )
        self.verificationURL = settings.httpURL(
            "VERIFICATION_INTERNAL_URL",
            default: "http://127.0.0.1:8012",
            help: "Base URL of verification-service's internal API (teleTAN creation)."
        )
        self.upstream = UpstreamPolicy(settings: settings, prefix: "VERIFICATION", peer: "verification-service")
        self.nhsEnabled = settings.bool(
            "NHS_ENABLED",
            default: false,
            help: "Take the NHS risky venues' uploads (API key highRiskVenuesCodeUpload) and publish them."
        )
        self.distributionURL = settings.httpURL(
            "DISTRIBUTION_INTERNAL_URL",
            default: "http://127.0.0.1:8015",
            help: "Base URL of distribution-service's internal API (publishes the NHS risky venues), with NHS_ENABLED."
        )
        self.serviceToken = settings.serviceTokenSigner(issuer: "portal-service")
        self.policy = PortalPolicy(settings: settings)

        let keyID = settings.string(
            "PORTAL_JWT_KEY_ID",
            default: "portal-1",
            help: "kid of the portal's tokens and JWKS."
        )
        // A random key stands in for a missing or unreadable file: the problem is reported, so start-up fails anyway.
        let key =
            settings.requiredFile(
                "PORTAL_JWT_KEY_FILE",
                expected: "PEM EC P-256 private key",
                help: "PEM EC P-256 private key the portal signs its tokens with."
            ) { try? P256.Signing.PrivateKey(pemRepresentation: $0) } ?? P256.Signing.PrivateKey()
        self.signer = PortalJWTSigner(key: key, keyID: keyID)
        self.totpKeys = Self.totpKeys(settings: settings) ?? .random()

        let hosts = settings.list(
            "PORTAL_ALLOWED_HOSTS",
            help: "Host header values the portal answers (host:port); others get 400."
        )
        self.allowedHosts = Set((hosts.isEmpty ? ["127.0.0.1:8004", "localhost:8004"] : hosts).map { $0.lowercased() })
        self.secureCookies = settings.bool(
            "PORTAL_SECURE_COOKIES",
            default: false,
            help: "Mark the session cookie Secure (set behind TLS)."
        )

        let authoritiesFile = settings.optionalString(
            "HEALTH_AUTHORITIES_FILE",
            help:
                "JSON list [{\"name\": …, \"nr\": …}] of the authorities EVENT teleTANs are issued for (default: bundled)."
        )
        let url =
            authoritiesFile.map(URL.init(fileURLWithPath:))
            ?? Bundle.module.url(forResource: "health-authorities", withExtension: "json", subdirectory: "Resources")
        do {
            guard let url else { throw CocoaError(.fileNoSuchFile) }
            self.authorities = try JSONDecoder().decode([HealthAuthority].self, from: Data(contentsOf: url))
        } catch {
            settings.report(
                "HEALTH_AUTHORITIES_FILE",
                "cannot be read as [{\"name\", \"nr\"}]: \(error.localizedDescription)"
            )
            self.authorities = []
        }
    }

    /// The `TOTP_KEY_FILE` setting, shared with the administrator's command line.
    static func totpKeys(settings: SettingsReader) -> KeyRing? {
        settings.keyRing(
            "TOTP_KEY_FILE",
            keyBytes: 32...32,
            help:
                "File of the keys officers' TOTP secrets are sealed with (AES-256-GCM): one id=base64:<key> (or "
                + "id=hex:<key>) per line, 32 bytes each; the first seals, all open."
        )
    }
}
