// The maps between transmission risk level (TRL) and days since onset of symptoms (DSOS), cwa-server §1.6 and §5.6.

package import Foundation

/// Derives the missing one of a key's TRL and DSOS. Submission uses it for keys from phones, federation for
/// keys from the gateway; the maps live in one resource file, `Resources/derivation-maps.json`.
package struct TEKFieldDerivations: Sendable, Equatable {
    /// TRL 1…8 → an EFGS "symptom status unknown" DSOS around 4000.
    package let dsosFromTRL: [Int: Int]
    /// The 274 DSOS values the reference maps to a TRL; any other DSOS gets the default TRL.
    package let trlFromDSOS: [Int: Int]

    package init(dsosFromTRL: [Int: Int], trlFromDSOS: [Int: Int]) {
        self.dsosFromTRL = dsosFromTRL
        self.trlFromDSOS = trlFromDSOS
    }

    /// The maps of the bundled resource; a damaged resource is a build defect, so it stops the process.
    package static let bundled: TEKFieldDerivations = {
        do {
            return try Self.load(
                Data(contentsOf: Bundle.module.url(forResource: "derivation-maps", withExtension: "json")!)
            )
        } catch {
            fatalError("derivation-maps.json is unreadable: \(error)")
        }
    }()

    /// Reads the resource's JSON: `{"dsosFromTRL": {"1": 3986, …}, "trlFromDSOS": {"-5": 2, …}}`.
    package static func load(_ data: Data) throws -> TEKFieldDerivations {
        struct File: Decodable {
            var dsosFromTRL: [String: Int]
            var trlFromDSOS: [String: Int]
        }
        let file = try JSONDecoder().decode(File.self, from: data)
        func integers(_ map: [String: Int]) throws -> [Int: Int] {
            try Dictionary(
                uniqueKeysWithValues: map.map { key, value in
                    guard let number = Int(key) else {
                        throw DecodingError.dataCorrupted(
                            .init(codingPath: [], debugDescription: "'\(key)' is not an integer")
                        )
                    }
                    return (number, value)
                }
            )
        }
        return TEKFieldDerivations(
            dsosFromTRL: try integers(file.dsosFromTRL),
            trlFromDSOS: try integers(file.trlFromDSOS)
        )
    }

    /// The DSOS for a key that carries only `trl`; nil for a TRL outside 1…8.
    package func dsos(forTRL trl: Int) -> Int? {
        self.dsosFromTRL[trl]
    }

    /// The TRL for a key that carries only `dsos`: the map's value, or `defaultTRL` when the map has none.
    package func trl(forDSOS dsos: Int, defaultTRL: Int) -> Int {
        self.trlFromDSOS[dsos] ?? defaultTRL
    }
}
