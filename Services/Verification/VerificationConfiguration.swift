// Every setting of verification-service, read and validated once.

import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation

/// The configuration of verification-service.
struct VerificationConfiguration: ServiceConfiguration {
    /// The app-facing port (behind the gateway), the database, the logging.
    var basics: ServiceBasics
    /// TAN verification, teleTAN creation, internal result poll (never routed by the gateway); `/metrics`
    /// (default 9002).
    var listeners: InternalListeners
    /// Largest accepted request body (the reference's `request.sizelimit`).
    var maxBodyBytes: Int
    /// Base URL of test-result-service's internal API.
    var testResultURL: String
    var upstream: UpstreamPolicy
    /// Signs the service tokens of calls to test-result-service (`SERVICE_TOKEN_KEY_FILE`).
    var serviceToken: ServiceTokenSigner
    /// Checks the service tokens of callers of the internal port (`SERVICE_CALLER_KEYS`).
    var callers: ServiceTokenVerifier
    var policy: VerificationPolicy
    var retention: VerificationRetention
    /// Keys that sign the bearer tokens of teleTAN requests.
    var jwtKeys: JWTKeySet
    /// The issuers, audience and longest lifetime those tokens must have.
    var jwtPolicy: JWTPolicy
    /// The keys teleTANs are hashed under (HMAC-SHA-256): the first hashes new teleTANs, every one is tried when a
    /// teleTAN is redeemed.
    var teleTANPepper: KeyRing
    /// The fake-delay estimate before real requests were measured, and the weight of the past in it.
    var fakeDelay: FakeDelay.Settings
    /// The NHS test path (orders, polls, CTA exchanges), when `NHS_ENABLED`.
    var nhs: NHSSettings?
    /// `NHS_ORDER_WEBSITE`, `NHS_REGISTER_WEBSITE`: the pages an order's CTA token is appended to.
    var nhsOrderWebsite: String
    var nhsRegisterWebsite: String
    /// `NHS_IPC_*` and `NHS_CB_*`: isolation payment tokens and circuit-breaker approvals.
    var isolationPayment: NHSIsolationPaymentSettings
    var circuitBreaker: NHSCircuitBreakerSettings

    /// Reads:
    /// - `HTTP_HOST` (127.0.0.1), `HTTP_PORT` (8002), `INTERNAL_HTTP_HOST` (127.0.0.1), `INTERNAL_HTTP_PORT` (8012)
    /// - `DATABASE_URL` (required, secret), `DATABASE_POOL_SIZE`, `DATABASE_AUTO_MIGRATE`,
    ///   `DATABASE_STATEMENT_TIMEOUT` (30s), `DATABASE_LEASE_TIMEOUT` (2s), `LOG_LEVEL`, `LOG_FORMAT`
    /// - `HTTP_MAX_BODY_SIZE` (10000 bytes)
    /// - `TEST_RESULT_INTERNAL_URL` (http://127.0.0.1:8013) and the `TEST_RESULT_*` timeouts and retries
    /// - `SERVICE_TOKEN_KEY_FILE` (required): PEM P-256 private key of this service's calls to test-result-service
    /// - `SERVICE_CALLER_KEYS` (required): `caller=<PEM public key file>` of the services that call the internal API
    /// - `TELETAN_JWT_PUBLIC_KEYS` (required: a file, or the PEM/JWKS text itself)
    /// - `TELETAN_PEPPER_FILE` (required: a key file, `id=base64:<key>` per line, keys of 32 to 128 bytes)
    /// - the lifetimes and quotas of `VerificationPolicy`, the clean-up of `VerificationRetention`
    /// - `FAKE_DELAY_INITIAL` (10ms), `FAKE_DELAY_SAMPLES` (5)
    /// - `NHS_ENABLED` (false), `NHS_MAINTENANCE_MODE` (false); with NHS_ENABLED `NHS_SIGNING_KEYS` and
    ///   `NHS_CTA_PEPPER_FILE` (the file test-result-service has) are required; `NHS_ORDER_WEBSITE`,
    ///   `NHS_REGISTER_WEBSITE`; `NHS_IPC_TOKEN_CREATION_ENABLED` (true), `NHS_IPC_COUNTRIES` (England,Wales),
    ///   `NHS_IPC_WEBSITE`, `NHS_IPC_TOKEN_LIFETIME` (14d); `NHS_CB_TOKEN_LIFETIME` (1d), `NHS_CB_SPIKE_MULTIPLE` (3),
    ///   `NHS_CB_SPIKE_MINIMUM` (100)
    init(settings: SettingsReader) {
        self.basics = ServiceBasics(settings: settings, port: 8002, purpose: "app API")
        self.listeners = InternalListeners(
            settings: settings,
            beside: self.basics.http,
            internalPort: 8012,
            metricsPort: 9002
        )
        self.maxBodyBytes = settings.maxBodySize(default: 10_000, range: 1024...1_048_576)
        self.testResultURL = settings.httpURL(
            "TEST_RESULT_INTERNAL_URL",
            default: "http://127.0.0.1:8013",
            help: "Base URL of test-result-service's internal API."
        )
        self.upstream = UpstreamPolicy(settings: settings, prefix: "TEST_RESULT", peer: "test-result-service")
        self.serviceToken = settings.serviceTokenSigner(issuer: "verification-service")
        self.callers = settings.serviceTokenVerifier(
            audience: "verification-service",
            routes: InternalController.routes
        )
        self.policy = VerificationPolicy(settings: settings)
        self.retention = VerificationRetention(settings: settings)
        let keys = settings.requiredString(
            "TELETAN_JWT_PUBLIC_KEYS",
            help: "Public keys of the teleTAN bearer tokens (ES256/RS256): a file path, or PEM or JWKS text."
        )
        self.jwtKeys = JWTKeySet(entries: [])
        if !keys.isEmpty {
            do {
                self.jwtKeys = try JWTKeySet.parse(Self.keyText(keys))
            } catch let error as JWTKeyError {
                settings.report("TELETAN_JWT_PUBLIC_KEYS", error.description)
            } catch {
                settings.report("TELETAN_JWT_PUBLIC_KEYS", "cannot be read as a file")
            }
        }
        let defaultJWT = JWTPolicy()
        let issuers = settings.list(
            "TELETAN_JWT_ISSUERS",
            help: "Accepted iss of teleTAN bearer tokens, comma-separated (default: portal-service)."
        )
        self.jwtPolicy = JWTPolicy(
            issuers: issuers.isEmpty ? defaultJWT.issuers : Set(issuers),
            audience: settings.string(
                "TELETAN_JWT_AUDIENCE",
                default: defaultJWT.audience,
                help: "The aud a teleTAN bearer token must name."
            ),
            maxLifetime: settings.duration(
                "TELETAN_JWT_MAX_LIFETIME",
                default: defaultJWT.maxLifetime,
                minimum: .seconds(10),
                help: "Longest validity (exp - iat) of a teleTAN bearer token; longer ones get 401."
            )
        )
        self.teleTANPepper =
            settings.keyRing(
                "TELETAN_PEPPER_FILE",
                keyBytes: 32...128,
                help:
                    "File of the keys teleTANs are hashed under (HMAC-SHA-256): one id=base64:<key> (or id=hex:<key>) per "
                    + "line, 32 to 128 bytes each; the first hashes new teleTANs, all are tried on redemption."
            ) ?? .random()
        self.fakeDelay = FakeDelay.Settings(settings: settings, defaultSamples: 5)
        self.nhs = NHSSettings.read(settings: settings, signs: true, storesCTATokens: true)
        self.nhsOrderWebsite = settings.httpURL(
            "NHS_ORDER_WEBSITE",
            default: "https://self-referral.test-for-coronavirus.service.gov.uk/cta-start",
            help: "Page where a person books the test of an NHS order; ?ctaToken=<token> is appended."
        )
        self.nhsRegisterWebsite = settings.httpURL(
            "NHS_REGISTER_WEBSITE",
            default: "https://self-referral.test-for-coronavirus.service.gov.uk/cta-start",
            help: "Page where a person registers a home test kit (V1 home-kit/register); ?ctaToken=<token> is appended."
        )
        self.isolationPayment = NHSIsolationPaymentSettings(settings: settings)
        self.circuitBreaker = NHSCircuitBreakerSettings(settings: settings)
    }

    /// Inline PEM or JWKS as it is; anything else names a file.
    private static func keyText(_ value: String) throws -> String {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("-----BEGIN") || trimmed.hasPrefix("{") { return trimmed }
        return try String(contentsOfFile: trimmed, encoding: .utf8)
    }
}
