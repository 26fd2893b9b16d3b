// Service-token keys for tests: one fixed P-256 key per caller name, its PEM files written once under the temporary
// folder (as `TestKeyFiles` writes key files).

import Crypto
package import ENCrypto
import ENServiceKit
import Foundation
package import HTTPTypes

/// The key of a caller is derived from its name, so every test process writes the same files and signs tokens the
/// services configured by `TestSettings` accept.
package enum TestServiceKeys {
    /// The callers verification-service's internal port trusts in the test settings.
    package static let verificationCallers = ["submission-service", "portal-service", "dcc-server"]
    /// The callers test-result-service's internal port trusts in the test settings.
    package static let testResultCallers = ["verification-service"]

    /// A signer for `caller`, with its fixed key.
    package static func signer(_ caller: String) -> ServiceTokenSigner {
        ServiceTokenSigner(issuer: caller, key: self.key(caller))
    }

    /// `X-CWA-Service-Token` of `caller` for `audience`, valid now.
    package static func header(_ caller: String, for audience: String) -> HTTPFields {
        [.cwaServiceToken: self.signer(caller).token(audience: audience, now: Date())]
    }

    /// The same as a name and value, for clients that take plain strings.
    package static func pair(_ caller: String, for audience: String) -> (String, String) {
        (HTTPField.Name.cwaServiceToken.rawName, self.signer(caller).token(audience: audience, now: Date()))
    }

    /// `headers` plus the service token of the caller that owns `uri` on verification-service's internal port
    /// (unless `headers` carry one already); other URIs get `headers` unchanged.
    package static func verificationCaller(_ headers: HTTPFields, uri: String) -> HTTPFields {
        let owners = [
            "/version/v1/tan/verify": "submission-service", "/version/v1/tan/redemption": "submission-service",
            "/version/v1/tan/teletan": "portal-service",
            "/version/v1/testresult": "dcc-server",
        ]
        guard let caller = owners[uri], headers[.cwaServiceToken] == nil else { return headers }
        var headers = headers
        headers.append(contentsOf: self.header(caller, for: "verification-service"))
        return headers
    }

    /// The PEM file of `caller`'s private key (`SERVICE_TOKEN_KEY_FILE`).
    package static func privateKeyFile(_ caller: String) -> String {
        self.write(self.key(caller).pemRepresentation, suffix: ".pem")
    }

    /// The PEM file of `caller`'s public key.
    package static func publicKeyFile(_ caller: String) -> String {
        self.write(self.key(caller).publicKey.pemRepresentation, suffix: ".pub.pem")
    }

    /// `SERVICE_CALLER_KEYS` for `callers`.
    package static func callerKeys(_ callers: [String]) -> String {
        callers.map { "\($0)=\(self.publicKeyFile($0))" }.joined(separator: ",")
    }

    private static func key(_ caller: String) -> P256.Signing.PrivateKey {
        // A SHA-256 digest is a valid P-256 scalar except with negligible probability.
        let seed = SHA256.hash(data: Data("test service key \(caller)".utf8))
        return try! P256.Signing.PrivateKey(rawRepresentation: Data(seed))
    }

    private static func write(_ text: String, suffix: String) -> String {
        (try? TestKeyFiles.write(text, suffix: suffix)) ?? "/nonexistent/test-service-key"
    }
}
