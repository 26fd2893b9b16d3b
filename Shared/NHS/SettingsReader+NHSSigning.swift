// The keys that sign the NHS API family's answers and files (nhs §2).

package import ENCrypto
import ENServiceKit
import Foundation

extension SettingsReader {
    /// `NHS_SIGNING_KEYS`: `id=<PEM file of an EC P-256 private key>` entries, comma-separated. The first signs; the
    /// others are kept for a rotation (the apps hold each public key under its id). `nil` (nothing reported) when the
    /// setting is empty and `required` is false.
    package func nhsSigner(required: Bool) -> NHSSigner? {
        let name = "NHS_SIGNING_KEYS"
        let entries = self.list(
            name,
            help:
                "id=<PEM P-256 private key file> per NHS signing key, comma-separated; the first signs answers and files."
        )
        if entries.isEmpty {
            if required { self.report(name, "is required") }
            return nil
        }
        var keys: [NHSSigner.Key] = []
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
                parts[0].allSatisfy({ $0.isLetter || $0.isNumber || "-_:/".contains($0) })
            else {
                self.report(name, "expects id=<file> entries with a plain id, got '\(entry.prefix(40))'")
                continue
            }
            guard !keys.contains(where: { $0.id == parts[0] }) else {
                self.report(name, "names the key id '\(parts[0])' twice")
                continue
            }
            guard let text = try? String(contentsOfFile: parts[1], encoding: .utf8),
                let key = NHSSigner.Key(id: parts[0], pem: text)
            else {
                self.report(name, "\(parts[1]) (key '\(parts[0])') is not a readable PEM EC P-256 private key")
                continue
            }
            keys.append(key)
        }
        return keys.isEmpty ? nil : NHSSigner(keys: keys)
    }
}
