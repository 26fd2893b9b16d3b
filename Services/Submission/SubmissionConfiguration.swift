// Every setting of submission-service, read and validated once.

import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation

/// The configuration of submission-service.
struct SubmissionConfiguration: ServiceConfiguration {
    /// The app-facing port (behind the gateway), the database, the logging.
    var basics: ServiceBasics
    /// `/metrics` alone, for the monitoring network policy (`METRICS_HOST`, `METRICS_PORT`, default 9001).
    var metrics: ListenAddress
    /// Largest accepted request body (`MAX_REQUEST_BYTES`; the reference's `maximum-request-size`).
    var maxRequestBytes: Int
    /// Base URL of verification-service's internal API.
    var verificationURL: String
    var upstream: UpstreamPolicy
    /// Base URL of data-donation-service's internal API, which redeems self-report OTPs.
    var dataDonationURL: String
    var dataDonationUpstream: UpstreamPolicy
    /// Signs the service tokens of calls to verification-service and data-donation-service (`SERVICE_TOKEN_KEY_FILE`).
    var serviceToken: ServiceTokenSigner
    var policy: SubmissionPolicy
    /// When and how often held submissions are completed or released.
    var recovery: RecoveryPolicy
    /// The fake-delay estimate before real requests were measured, and the weight of the past in it.
    var fakeDelay: FakeDelay.Settings
    /// The NHS key submission and its dummies, when `NHS_ENABLED`.
    var nhs: NHSSettings?

    /// Reads:
    /// - `HTTP_HOST` (127.0.0.1), `HTTP_PORT` (8001)
    /// - `DATABASE_URL` (required, secret), `DATABASE_POOL_SIZE`, `DATABASE_AUTO_MIGRATE`,
    ///   `DATABASE_STATEMENT_TIMEOUT` (30s), `DATABASE_LEASE_TIMEOUT` (2s), `LOG_LEVEL`, `LOG_FORMAT`
    /// - `MAX_REQUEST_BYTES` (102400, the reference's `100KB`; it allows 280 B…200 KB, in units of 1024)
    /// - `VERIFICATION_INTERNAL_URL` (http://127.0.0.1:8012) and the `VERIFICATION_*` timeouts and retries
    /// - `DATA_DONATION_INTERNAL_URL` (http://127.0.0.1:8017) and the `DATA_DONATION_*` timeouts and retries
    /// - `SERVICE_TOKEN_KEY_FILE` (required): PEM P-256 private key of this service's calls to its peers
    /// - the limits of `SubmissionPolicy` (including `MAX_KEYS_PER_DAY`, `MAX_NUMBER_OF_DAYS_FOR_SRS`) and
    ///   `CheckInPolicy`
    /// - `SUBMISSION_RECOVERY_AFTER` (30s), `SUBMISSION_RECOVERY_INTERVAL` (1m)
    /// - `FAKE_DELAY_INITIAL` (10ms), `FAKE_DELAY_SAMPLES` (10)
    /// - `NHS_ENABLED` (false), `NHS_MAINTENANCE_MODE` (false), `NHS_SIGNING_KEYS` (required with NHS_ENABLED)
    init(settings: SettingsReader) {
        self.basics = ServiceBasics(settings: settings, port: 8001, purpose: "app API")
        self.metrics = MetricsListener.address(
            settings: settings,
            defaultPort: 9001,
            otherListeners: [self.basics.http]
        )
        self.maxRequestBytes = settings.maxBodySize(
            "MAX_REQUEST_BYTES",
            default: 102_400,
            range: 280...204_800,
            of: "submission body"
        )
        self.verificationURL = settings.httpURL(
            "VERIFICATION_INTERNAL_URL",
            default: "http://127.0.0.1:8012",
            help: "Base URL of verification-service's internal API (TAN verification)."
        )
        self.upstream = UpstreamPolicy(settings: settings, prefix: "VERIFICATION", peer: "verification-service")
        self.dataDonationURL = settings.httpURL(
            "DATA_DONATION_INTERNAL_URL",
            default: "http://127.0.0.1:8017",
            help: "Base URL of data-donation-service's internal API (self-report OTP redemption)."
        )
        self.dataDonationUpstream = UpstreamPolicy(
            settings: settings,
            prefix: "DATA_DONATION",
            peer: "data-donation-service"
        )
        self.serviceToken = settings.serviceTokenSigner(issuer: "submission-service")
        self.policy = SubmissionPolicy(settings: settings)
        self.recovery = RecoveryPolicy(settings: settings)
        self.fakeDelay = FakeDelay.Settings(settings: settings, defaultSamples: 10)
        self.nhs = NHSSettings.read(settings: settings, signs: true, storesCTATokens: false)
    }
}
