// Key files as settings: a required path whose file is parsed and validated at start-up.

package import ENCrypto
import Foundation

extension SettingsReader {
    /// The key file named by the required setting `name` (`id=base64:<key>` lines, the first key current; see
    /// `KeyRing`), each key `keyBytes` long. A missing setting, an unreadable file or a bad line is reported under
    /// `name`; reports name the path and the line, never the file's content. `nil` when something was reported.
    package func keyRing(_ name: String, keyBytes: ClosedRange<Int>, help: String) -> KeyRing? {
        let path = self.requiredString(name, help: help)
        guard !path.isEmpty else { return nil }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            self.report(name, "\(path) cannot be read")
            return nil
        }
        do {
            return try KeyRing.parse(text, keyBytes: keyBytes)
        } catch {
            self.report(name, "\(path) \(error.description)")
            return nil
        }
    }
}
