// Every setting of data-donation-service, read and validated once.

import Crypto
import ENAttestation
import ENCrypto
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation
import SwiftASN1
import X509

/// Which Android verdicts are accepted (`ANDROID_ATTESTATION`).
enum AndroidAttestationMode: String, Sendable, CaseIterable {
    case safetynet
    case playIntegrity = "play-integrity"
    case both

    var acceptsSafetyNet: Bool { self != .playIntegrity }
    var acceptsPlayIntegrity: Bool { self != .safetynet }
}

/// The configuration of data-donation-service.
struct DataDonationConfiguration: ServiceConfiguration {
    /// The app-facing port (behind the gateway), the database, the logging.
    var basics: ServiceBasics
    /// OTP redemption (never routed by the gateway); `/metrics` (default 9007).
    var listeners: InternalListeners
    var maxBodyBytes: Int
    /// Checks the service tokens of callers of the internal port (`SERVICE_CALLER_KEYS`).
    var callers: ServiceTokenVerifier
    var android: AndroidAttestor
    var androidMode: AndroidAttestationMode
    var androidIDPepper: KeyRing
    var deviceCheckURL: String
    var deviceCheckCredentials: DeviceCheckCredentials
    var deviceCheckTimeout: Duration
    var quotas: QuotaPolicy
    var lifetimes: OTPLifetimes
    var retention: DonationRetention
    var fakeDelay: FakeDelay.Settings
    /// NHS mobile analytics (the daily packet, events), when `NHS_ENABLED`; the events are signed.
    var nhs: NHSSettings?
    /// `NHS_ANALYTICS_EVENTS_ENABLED`: off, events are answered 503.
    var nhsEventsEnabled: Bool

    private static let decryptionHelp =
        "The app's Play Integrity decryption key (Base64 AES-256, from the Play Console); required with "
        + "ANDROID_ATTESTATION play-integrity or both."
    private static let verificationHelp =
        "The app's Play Integrity verification key (Base64 DER EC P-256 public key, from the Play Console); required "
        + "with ANDROID_ATTESTATION play-integrity or both."

    /// Reads:
    /// - `HTTP_HOST` (127.0.0.1), `HTTP_PORT` (8007), `INTERNAL_HTTP_HOST` (127.0.0.1), `INTERNAL_HTTP_PORT` (8017)
    /// - `DATABASE_URL` (required, secret) and the other `DATABASE_*`, `LOG_LEVEL`, `LOG_FORMAT`
    /// - `HTTP_MAX_BODY_SIZE` (1048576 bytes)
    /// - `SERVICE_CALLER_KEYS` (required): `caller=<PEM public key file>` of the services that redeem OTPs
    /// - `ANDROID_ATTESTATION` (play-integrity), `ATTESTATION_TRUST_ROOTS`, `PLAY_INTEGRITY_DECRYPTION_KEY`,
    ///   `PLAY_INTEGRITY_VERIFICATION_KEY`, `ANDROID_PACKAGE_NAMES`, `ANDROID_CERTIFICATE_DIGESTS`, `ATTESTATION_VALIDITY`
    /// - `ANDROID_ID_PEPPER_FILE` (required)
    /// - `DEVICE_CHECK_URL`, `DEVICE_CHECK_TEAM_ID`, `DEVICE_CHECK_KEY_ID`, `DEVICE_CHECK_KEY_FILE` (required)
    /// - the quotas, OTP lifetimes and retention below; `FAKE_DELAY_INITIAL`, `FAKE_DELAY_SAMPLES` (10)
    /// - `NHS_ENABLED` (false), `NHS_MAINTENANCE_MODE`, with NHS_ENABLED `NHS_SIGNING_KEYS` (required);
    ///   `NHS_ANALYTICS_EVENTS_ENABLED` (true)
    init(settings: SettingsReader) {
        self.basics = ServiceBasics(settings: settings, port: 8007, purpose: "app API")
        self.listeners = InternalListeners(
            settings: settings,
            beside: self.basics.http,
            internalPort: 8017,
            metricsPort: 9007
        )
        self.maxBodyBytes = settings.maxBodySize(default: 1_048_576, range: 4096...8_388_608)
        self.callers = settings.serviceTokenVerifier(
            audience: "data-donation-service",
            routes: InternalController.routes
        )

        // Android.
        var policy = AndroidAttestationPolicy()
        let packages = settings.list(
            "ANDROID_PACKAGE_NAMES",
            help: "Accepted app package names, comma-separated (default: de.rki.coronawarnapp)."
        )
        if !packages.isEmpty { policy.packageNames = Set(packages) }
        let digests = settings.list(
            "ANDROID_CERTIFICATE_DIGESTS",
            help:
                "Accepted SHA-256 digests of the app's signing certificate, Base64, comma-separated (default: the CWA app's)."
        )
        if !digests.isEmpty {
            policy.certificateDigests = Set(digests.compactMap { decodeBase64($0) })
            if policy.certificateDigests.count != digests.count {
                settings.report("ANDROID_CERTIFICATE_DIGESTS", "every entry must be Base64")
            }
        }
        policy.validity =
            settings.duration(
                "ATTESTATION_VALIDITY",
                default: .seconds(7200),
                minimum: .seconds(60),
                help: "Largest distance of an attestation's time from now, and how long a salt may be reused."
            ).timeInterval
        self.androidMode = settings.choice(
            "ANDROID_ATTESTATION",
            default: AndroidAttestationMode.playIntegrity,
            help: "Android verdicts accepted: safetynet, play-integrity or both."
        )
        self.android = AndroidAttestor()
        let rootsHelp =
            "PEM file of the roots SafetyNet statements must chain to (Google's in production); required with "
            + "ANDROID_ATTESTATION safetynet or both."
        if !self.androidMode.acceptsSafetyNet { settings.describe("ATTESTATION_TRUST_ROOTS", help: rootsHelp) }
        if !self.androidMode.acceptsPlayIntegrity {
            settings.describe("PLAY_INTEGRITY_DECRYPTION_KEY", secret: true, help: Self.decryptionHelp)
            settings.describe("PLAY_INTEGRITY_VERIFICATION_KEY", help: Self.verificationHelp)
        }
        if self.androidMode.acceptsSafetyNet {
            let roots = settings.requiredFile(
                "ATTESTATION_TRUST_ROOTS",
                expected: "PEM file of CA certificates",
                help: rootsHelp
            ) { text in
                (try? PEMDocument.parseMultiple(pemString: text).map { try Certificate(pemDocument: $0) })
                    .flatMap { $0.isEmpty ? nil : $0 }
            }
            self.android.safetyNet = SafetyNetVerifier(trustRoots: roots ?? [], policy: policy)
        }
        if self.androidMode.acceptsPlayIntegrity {
            let decryption = settings.requiredString(
                "PLAY_INTEGRITY_DECRYPTION_KEY",
                secret: true,
                help: Self.decryptionHelp
            )
            let verification = settings.requiredString("PLAY_INTEGRITY_VERIFICATION_KEY", help: Self.verificationHelp)
            let key = decodeBase64(decryption).flatMap { $0.count == 32 ? SymmetricKey(data: $0) : nil }
            let publicKey = decodeBase64(verification).flatMap { try? P256.Signing.PublicKey(derRepresentation: $0) }
            if key == nil, !decryption.isEmpty {
                settings.report("PLAY_INTEGRITY_DECRYPTION_KEY", "must be 32 bytes in Base64")
            }
            if publicKey == nil, !verification.isEmpty {
                settings.report("PLAY_INTEGRITY_VERIFICATION_KEY", "must be a Base64 DER EC P-256 public key")
            }
            if let key, let publicKey {
                self.android.playIntegrity = PlayIntegrityVerifier(
                    decryptionKey: key,
                    verificationKey: publicKey,
                    policy: policy
                )
            }
        }
        self.androidIDPepper =
            settings.keyRing(
                "ANDROID_ID_PEPPER_FILE",
                keyBytes: 32...128,
                help:
                    "File of the key Android IDs are stored under (HMAC-SHA-256): id=base64:<key> per line, the first is used."
            ) ?? .random()

        // iOS.
        self.deviceCheckURL = settings.httpURL(
            "DEVICE_CHECK_URL",
            default: "https://api.devicecheck.apple.com/v1",
            help: "Base URL of Apple's DeviceCheck API."
        )
        let teamID = settings.requiredString("DEVICE_CHECK_TEAM_ID", help: "Apple developer team id (the JWT's iss).")
        let keyID = settings.requiredString("DEVICE_CHECK_KEY_ID", help: "DeviceCheck key id (the JWT's kid).")
        let deviceKey = settings.requiredFile(
            "DEVICE_CHECK_KEY_FILE",
            expected: "PEM (PKCS#8) EC P-256 private key",
            help: "The DeviceCheck private key (.p8, PEM) the JWT is signed with."
        ) { try? P256.Signing.PrivateKey(pemRepresentation: $0) }
        self.deviceCheckCredentials = DeviceCheckCredentials(
            teamID: teamID,
            keyID: keyID,
            key: deviceKey ?? P256.Signing.PrivateKey()
        )
        self.deviceCheckTimeout = settings.duration(
            "DEVICE_CHECK_TIMEOUT",
            default: .seconds(5),
            minimum: .milliseconds(100),
            help: "Longest wait for one DeviceCheck call."
        )

        var quotas = QuotaPolicy()
        quotas.saltValidity = policy.validity
        quotas.analyticsInterval =
            settings.duration(
                "ANALYTICS_INTERVAL",
                default: .seconds(86_100),
                minimum: .seconds(0),
                help: "Shortest time between two analytics donations of one iOS API token."
            ).timeInterval
        quotas.selfReportInterval =
            TimeInterval(
                settings.int(
                    "SRS_DAYS_BETWEEN_SUBMISSIONS",
                    default: 90,
                    range: 0...365,
                    help: "Days before an Android ID or iOS API token may create another self-report OTP."
                )
            ) * 86_400
        self.quotas = quotas
        var lifetimes = OTPLifetimes()
        lifetimes.survey =
            settings.duration(
                "OTP_VALIDITY",
                default: .seconds(3600),
                minimum: .seconds(60),
                help: "Lifetime of a survey OTP."
            ).timeInterval
        lifetimes.errorLog =
            settings.duration(
                "ELS_OTP_VALIDITY",
                default: .seconds(3600),
                minimum: .seconds(60),
                help: "Lifetime of an error-log OTP."
            ).timeInterval
        lifetimes.selfReport =
            settings.duration(
                "SRS_OTP_VALIDITY",
                default: .seconds(1800),
                minimum: .seconds(60),
                help: "Lifetime of a self-report OTP."
            ).timeInterval
        self.lifetimes = lifetimes
        self.nhs = NHSSettings.read(settings: settings, signs: true, storesCTATokens: false)
        self.nhsEventsEnabled = settings.bool(
            "NHS_ANALYTICS_EVENTS_ENABLED",
            default: true,
            help:
                "Accept NHS mobile analytics events; off, they are answered 503 (the reference's ACCEPT_REQUESTS_ENABLED)."
        )
        self.retention = DonationRetention(settings: settings)
        // A salt must be remembered as long as it may be reused, or an old one would pass as new.
        self.retention.salt = max(self.retention.salt, policy.validity)
        self.fakeDelay = FakeDelay.Settings(settings: settings, defaultSamples: 10)
    }
}
