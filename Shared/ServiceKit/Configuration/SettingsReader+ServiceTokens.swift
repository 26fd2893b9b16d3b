// The service-token settings: the key a caller signs with, the keys a callee trusts.

package import ENCrypto
import Foundation

extension SettingsReader {
    /// `SERVICE_TOKEN_KEY_FILE` (required): the PEM EC P-256 private key this service signs its service tokens with,
    /// as `issuer`. A random key stands in when the setting is missing or unreadable (the problem is reported, so
    /// start-up fails anyway).
    package func serviceTokenSigner(issuer: String) -> ServiceTokenSigner {
        self.requiredFile(
            "SERVICE_TOKEN_KEY_FILE",
            expected: "PEM EC P-256 private key",
            help: "PEM EC P-256 private key this service signs its calls to other services with (as \(issuer))."
        ) { ServiceTokenSigner(issuer: issuer, pem: $0) } ?? .random(issuer: issuer)
    }

    /// `SERVICE_CALLER_KEYS` (required unless `required` is false): `caller=<PEM file>` entries, comma-separated,
    /// naming the services allowed to call this one's internal port and the public keys (one or more `PUBLIC KEY`
    /// blocks) their tokens are checked with. Each caller must be one of `routes`' keys; what it may call is fixed
    /// there.
    package func serviceTokenVerifier(
        audience: String,
        routes: ServiceRoutes,
        required: Bool = true
    ) -> ServiceTokenVerifier {
        let name = "SERVICE_CALLER_KEYS"
        let known = routes.callers.sorted().joined(separator: ", ")
        let entries = self.list(
            name,
            help: "caller=<PEM public key file> per service allowed on the internal port (\(known))."
        )
        if entries.isEmpty && required { self.report(name, "is required") }
        var callers: [String: [ServiceTokenPublicKey]] = [:]
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                self.report(name, "expects caller=<file> entries, got '\(entry)'")
                continue
            }
            let (caller, path) = (parts[0], parts[1])
            guard routes.callers.contains(caller) else {
                self.report(name, "names '\(caller)', which may call nothing here (callers: \(known))")
                continue
            }
            guard callers[caller] == nil else {
                self.report(name, "names '\(caller)' twice")
                continue
            }
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                let keys = ServiceTokenVerifier.publicKeys(pem: text)
            else {
                self.report(name, "\(path) (for \(caller)) is not a readable PEM file of EC P-256 public keys")
                continue
            }
            callers[caller] = keys
        }
        return ServiceTokenVerifier(audience: audience, callers: callers)
    }
}
