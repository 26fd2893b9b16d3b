// The NHS API family in tests: its settings, the answer-signing key and its verifier, and API keys.

package import Crypto
package import ENCrypto
package import ENNHS
import ENServiceKit
import Foundation

package enum TestNHS {
    /// A fixed P-256 key (from a seed), id `test-nhs`, that signs answers.
    package static let signingKey = try! P256.Signing.PrivateKey(
        rawRepresentation: TestKeyFiles.key(seed: "nhs-signing")
    )

    /// Verifies answers signed with `signingKey`, as an app would.
    package static var verifier: NHSVerifier { NHSVerifier(keys: ["test-nhs": self.signingKey.publicKey]) }

    /// `NHS_ENABLED`, `NHS_SIGNING_KEYS` (the key as a file) and `NHS_CTA_PEPPER_FILE` (the standard test key file).
    package static func settings(_ overrides: [String: String] = [:]) -> [String: String] {
        let pem = (try? TestKeyFiles.write(self.signingKey.pemRepresentation, suffix: ".pem")) ?? "/nonexistent"
        return [
            "NHS_ENABLED": "true", "NHS_SIGNING_KEYS": "test-nhs=\(pem)", "NHS_CTA_PEPPER_FILE": TestKeyFiles.standard,
        ].merging(overrides) { _, new in new }
    }

    /// The pepper of `NHS_CTA_PEPPER_FILE` in `settings`.
    package static var pepper: KeyRing { try! TestKeyFiles.ring(TestKeyFiles.standardKeys) }

    /// The app's key (`mobile`) and the lab's (`testResultUpload`).
    package static let mobile = NHSAPIKeyCredential(keyName: "app-test", secret: "mobile-secret-of-the-tests")
    package static let lab = NHSAPIKeyCredential(keyName: "lab-test", secret: "lab-secret-of-the-tests")
    /// The isolation payment website's key (`isolationPayment`).
    package static let paymentWebsite = NHSAPIKeyCredential(keyName: "ipc-web-test", secret: "ipc-secret-of-the-tests")
    /// The risky venues' uploader (`highRiskVenuesCodeUpload`).
    package static let venues = NHSAPIKeyCredential(keyName: "venues-test", secret: "venues-secret-of-the-tests")
    /// The risky post districts' uploader (`highRiskPostCodeUpload`).
    package static let postDistricts = NHSAPIKeyCredential(
        keyName: "districts-test",
        secret: "districts-secret-of-the-tests"
    )

    /// A key store that knows `mobile`, `lab` and `paymentWebsite`.
    package static func keyStore() -> InMemoryNHSAPIKeyStore {
        let store = InMemoryNHSAPIKeyStore()
        store.add(self.mobile, api: .mobile)
        store.add(self.lab, api: .testResultUpload)
        store.add(self.paymentWebsite, api: .isolationPayment)
        store.add(self.venues, api: .highRiskVenuesCodeUpload)
        store.add(self.postDistricts, api: .highRiskPostCodeUpload)
        return store
    }
}
