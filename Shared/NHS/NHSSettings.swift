// The settings of the NHS API family a service serves: off unless `NHS_ENABLED`.

package import ENCrypto
package import ENServiceKit

/// What a service needs to serve NHS routes; `nil` (and no NHS route mounted) unless `NHS_ENABLED=true`.
package struct NHSSettings: Sendable {
    /// `NHS_MAINTENANCE_MODE`: every NHS route answers 503 (nhs §1, step 2).
    package var maintenance: Bool
    /// `NHS_SIGNING_KEYS`, for services with signed routes.
    package var signer: NHSSigner?
    /// `NHS_CTA_PEPPER_FILE`, for services that store CTA tokens.
    package var ctaPepper: KeyRing?

    package init(maintenance: Bool = false, signer: NHSSigner? = nil, ctaPepper: KeyRing? = nil) {
        self.maintenance = maintenance
        self.signer = signer
        self.ctaPepper = ctaPepper
    }

    /// Reads `NHS_ENABLED` and, when it is true, what the service needs: the signing keys when it `signs`, the CTA
    /// pepper when it `storesCTATokens`.
    package static func read(settings: SettingsReader, signs: Bool, storesCTATokens: Bool) -> NHSSettings? {
        let enabled = settings.bool(
            "NHS_ENABLED",
            default: false,
            help: "Serve the NHS COVID-19 API family beside the CWA one."
        )
        let maintenance = settings.bool(
            "NHS_MAINTENANCE_MODE",
            default: false,
            help: "Answer 503 on every NHS route (the reference's MAINTENANCE_MODE)."
        )
        guard enabled else {
            // Named in --help (and read, then ignored) while the family is off, so a configuration can carry them.
            if signs {
                _ = settings.list("NHS_SIGNING_KEYS", help: "id=<PEM P-256 private key file> per NHS signing key.")
            }
            if storesCTATokens {
                _ = settings.optionalString(
                    "NHS_CTA_PEPPER_FILE",
                    help: "File of the keys CTA tokens are hashed under."
                )
            }
            return nil
        }
        var nhs = NHSSettings(maintenance: maintenance)
        if signs { nhs.signer = settings.nhsSigner(required: true) }
        if storesCTATokens {
            nhs.ctaPepper =
                settings.keyRing(
                    "NHS_CTA_PEPPER_FILE",
                    keyBytes: 32...128,
                    help:
                        "File of the keys CTA tokens are hashed under (HMAC-SHA-256): id=base64:<key> per line, 32 to "
                        + "128 bytes; the first hashes new tokens, all are tried on lookups."
                ) ?? .random()
        }
        return nhs
    }
}
