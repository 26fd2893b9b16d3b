// Every setting of distribution-service, read and validated once; signing keys and the app configuration are loaded
// here, so a missing key or a bad configuration file stops the service before anything is written.

import ENCrypto
import ENModels
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation

/// The configuration of distribution-service.
struct DistributionConfiguration: ServiceConfiguration {
    /// The port of health and metrics in `serve` mode, the database, the logging.
    var basics: ServiceBasics
    /// Time between runs in `serve` mode (the first run is at start).
    var interval: Duration
    var policy: KeyDistributionPolicy
    var signer: ArchiveSigner
    var appConfiguration: AppConfiguration
    var objectStore: ObjectStoreChoice
    var publishing: PublishPolicy
    /// Whether every run ends with an audit of the published tree against its plan (`AUDIT_AFTER_RUN`).
    var auditAfterRun: Bool
    /// The NHS app's static documents and their signing key, when `NHS_ENABLED`.
    var nhs: NHSDistribution?
    /// With `NHS_ENABLED`, in serve mode: the internal port where portal-service hands over risky venues, and the
    /// callers' keys (`INTERNAL_HTTP_PORT` 8015, `SERVICE_CALLER_KEYS`).
    var internalHTTP: ListenAddress
    var callers: ServiceTokenVerifier?

    /// Where the tree goes.
    enum ObjectStoreChoice: Sendable {
        case directory(URL)
        case s3(S3Configuration)
    }

    enum StoreKind: String, CaseIterable { case directory, s3 }

    /// Reads:
    /// - `HTTP_HOST` (127.0.0.1), `HTTP_PORT` (8005), `DATABASE_URL` (the `keys` database) and the other database and
    ///   logging settings, `DISTRIBUTION_INTERVAL` (1h)
    /// - the thresholds and windows of `KeyDistributionPolicy`
    /// - `SIGNING_KEY_FILES` (required: `path[:key id[:version]]`, comma-separated), `SIGNATURE_APP_BUNDLE_ID`
    /// - `APP_CONFIG_FILE` (the bundled `app-config.json` when unset)
    /// - `NHS_ENABLED` (false); with it `NHS_SIGNING_KEYS` (required), `NHS_DOCUMENTS_DIR` (the bundled documents
    ///   when unset), `SERVICE_CALLER_KEYS` (portal-service's key; without it no internal port), `INTERNAL_HTTP_HOST`
    ///   (127.0.0.1) and `INTERNAL_HTTP_PORT` (8015)
    /// - `OBJECT_STORE` (`directory` or `s3`), `CDN_DIRECTORY` (.data/cdn), the `S3_*` settings and the `PUBLISH_*`
    ///   limits; `AUDIT_AFTER_RUN` (true)
    init(settings: SettingsReader) {
        self.basics = ServiceBasics(settings: settings, port: 8005, purpose: "health and metrics (serve mode)")
        self.interval = settings.duration(
            "DISTRIBUTION_INTERVAL",
            default: .seconds(3600),
            minimum: .seconds(1),
            help: "Time between runs in serve mode; the first run is at start."
        )
        self.policy = KeyDistributionPolicy(settings: settings)

        let keyEntries = settings.list(
            "SIGNING_KEY_FILES",
            help:
                "Comma-separated PEM EC P-256 private keys as path[:key id[:version]] (id 262, version v1 by default); "
                + "with two keys every archive carries two signatures."
        )
        var keys: [SigningKey] = []
        if keyEntries.isEmpty { settings.report("SIGNING_KEY_FILES", "is required") }
        for entry in keyEntries {
            do {
                keys.append(try SigningKey.load(entry: entry))
            } catch {
                settings.report("SIGNING_KEY_FILES", "\(error)")
            }
        }
        self.signer = ArchiveSigner(
            keys: keys,
            appBundleID: settings.string(
                "SIGNATURE_APP_BUNDLE_ID",
                default: "de.rki.coronawarnapp",
                help: "app_bundle_id of every signature (de.rki.coronawarnapp-dev for development keys)."
            )
        )

        let appConfigFile = settings.optionalString(
            "APP_CONFIG_FILE",
            help: "JSON file of the app configuration (default: the bundled app-config.json)."
        )
        do {
            self.appConfiguration = try AppConfiguration.load(
                contentsOf: appConfigFile.map(URL.init(fileURLWithPath:)) ?? AppConfiguration.bundledFileURL
            )
        } catch {
            settings.report("APP_CONFIG_FILE", "\(error)")
            // Never used: the problem stops the service before a run.
            self.appConfiguration = AppConfiguration(ios: .init(), android: .init())
        }

        self.nhs = Self.nhs(settings: settings)
        self.internalHTTP = ListenAddress(
            settings: settings,
            prefix: "INTERNAL_HTTP",
            defaultPort: 8015,
            purpose: "internal API (NHS lists from portal-service; serve mode with NHS_ENABLED)"
        )
        // Without callers (a CronJob's `run`, which serves nothing), no internal port: risky venues are then not
        // published.
        let callers = settings.serviceTokenVerifier(
            audience: "distribution-service",
            routes: NHSListPublisher.routes,
            required: false
        )
        if self.nhs != nil, !callers.callerNames.isEmpty {
            self.callers = callers
            self.internalHTTP.requireDistinctPort(from: [self.basics.http], settings: settings)
        }

        let kind = settings.choice(
            "OBJECT_STORE",
            default: StoreKind.directory,
            help: "Where the CDN tree is published: directory or s3."
        )
        let directory = settings.string(
            "CDN_DIRECTORY",
            default: ".data/cdn",
            help: "Folder of the tree when OBJECT_STORE is directory."
        )
        let s3 = S3Configuration(
            endpoint: settings.httpURL(
                "S3_ENDPOINT",
                default: "http://127.0.0.1:9000",
                help: "S3-compatible endpoint (path-style requests)."
            ),
            bucket: settings.string("S3_BUCKET", default: "cwa", help: "Bucket of the tree; it must exist."),
            region: settings.string("S3_REGION", default: "eu-central-1", help: "Region used in request signatures."),
            accessKeyID: kind == .s3 ? settings.requiredString("S3_ACCESS_KEY_ID", help: "S3 access key id.") : "",
            secretAccessKey: kind == .s3
                ? settings.requiredString("S3_SECRET_ACCESS_KEY", secret: true, help: "S3 secret access key.") : "",
            publicReadACL: settings.bool(
                "S3_PUBLIC_READ_ACL",
                default: false,
                help: "Send x-amz-acl: public-read with every upload."
            ),
            requestTimeout: settings.duration(
                "S3_REQUEST_TIMEOUT",
                default: .seconds(30),
                help: "Timeout of one S3 request."
            )
        )
        switch kind {
        case .directory: self.objectStore = .directory(URL(fileURLWithPath: directory))
        case .s3: self.objectStore = .s3(s3)
        }

        let defaults = PublishPolicy()
        self.auditAfterRun = settings.bool(
            "AUDIT_AFTER_RUN",
            default: true,
            help:
                "End every run by reading the listed key archives back and counting the keys the plan publishes that none holds (en_distribution_audit_missing_keys)."
        )
        self.publishing = PublishPolicy(
            parallelism: settings.int(
                "PUBLISH_PARALLELISM",
                default: defaults.parallelism,
                range: 1...64,
                help: "Uploads in flight at once."
            ),
            attempts: settings.int(
                "PUBLISH_RETRY_ATTEMPTS",
                default: defaults.attempts,
                range: 1...10,
                help: "Tries per upload or delete."
            ),
            backoff: settings.duration(
                "PUBLISH_RETRY_BACKOFF",
                default: defaults.backoff,
                help: "Pause before the first retry (doubled after)."
            ),
            maxFailedOperations: settings.int(
                "PUBLISH_MAX_FAILED_OPERATIONS",
                default: defaults.maxFailedOperations,
                range: 0...10_000,
                help: "More failed operations abort the run."
            ),
            forceUpdateKeyFiles: settings.bool(
                "FORCE_UPDATE_KEYFILES",
                default: false,
                help: "Rewrite already published key files (repair only; phones may have fetched the old ones)."
            )
        )
    }

    /// `NHS_ENABLED`, `NHS_SIGNING_KEYS`, `NHS_DOCUMENTS_DIR`: every document is read and checked now, so a bad one
    /// stops the service naming the file and the member.
    private static func nhs(settings: SettingsReader) -> NHSDistribution? {
        let enabled = settings.bool(
            "NHS_ENABLED",
            default: false,
            help: "Publish the NHS app's static documents (nhs §9), signed, under distribution/."
        )
        let folder = settings.optionalString(
            "NHS_DOCUMENTS_DIR",
            help: "Folder of the NHS documents (availability-ios.json, …; default: the bundled ones)."
        )
        guard enabled else {
            _ = settings.list("NHS_SIGNING_KEYS", help: "id=<PEM P-256 private key file> per NHS signing key.")
            return nil
        }
        let signer = settings.nhsSigner(required: true)
        guard let url = folder.map(URL.init(fileURLWithPath:)) ?? NHSDocuments.bundledFolder else {
            settings.report("NHS_DOCUMENTS_DIR", "is required: the bundled documents are missing")
            return nil
        }
        let (documents, problems) = NHSDocuments.load(from: url)
        for problem in problems { settings.report("NHS_DOCUMENTS_DIR", problem) }
        guard let signer, problems.isEmpty else { return nil }
        return NHSDistribution(documents: documents, signer: signer)
    }
}
