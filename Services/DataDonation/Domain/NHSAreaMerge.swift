// The privacy merge of NHS analytics (nhs §10): postcode district × local authority merged to coarse areas
// (`Resources/pd-la-merge.csv`) before anything is stored.

import Foundation

/// A postcode district and a local authority as they are stored: merged so that no area is small enough to point at
/// anyone, or `UNKNOWN`.
struct NHSArea: Sendable, Equatable {
    var postalDistrict: String
    var localAuthority: String

    static let unknown = NHSArea(postalDistrict: "UNKNOWN", localAuthority: "UNKNOWN")
}

/// The privacy merge table: `<district>_<LAD20CD>` → the merged district and its local authority.
struct NHSAreaMerge: Sendable {
    let table: [String: NHSArea]

    init(table: [String: NHSArea]) {
        self.table = table
    }

    /// The table shipped with the service.
    static func bundled() throws -> NHSAreaMerge {
        guard let url = Bundle.module.url(forResource: "pd-la-merge", withExtension: "csv", subdirectory: "Resources")
        else { throw CocoaError(.fileNoSuchFile) }
        return try NHSAreaMerge(csv: String(contentsOf: url, encoding: .utf8))
    }

    /// `"Postcode_District_LAD_ID","LAD20CD","Merged_Postcode_District"` and one quoted row per pair. The first field
    /// is `<district>_<authority>`, or `<district>_` for a district whatever its authority (its merged authority is
    /// then unknown), as the reference's parser reads it; the table's row for an empty pair (`_`) matches nothing.
    init(csv: String) throws {
        var table: [String: NHSArea] = [:]
        for (number, line) in csv.split(whereSeparator: \.isNewline).enumerated() where number > 0 {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            }
            guard fields.count == 3, fields[0].contains("_") else { throw NHSAreaMergeError(line: number + 1) }
            let pair = fields[0].split(separator: "_", maxSplits: 1).filter { !$0.isEmpty }
            switch pair.count {
            case 2: table["\(pair[0])_\(pair[1])"] = NHSArea(postalDistrict: fields[2], localAuthority: fields[1])
            case 1: table["\(pair[0])_UNKNOWN"] = NHSArea(postalDistrict: fields[2], localAuthority: "UNKNOWN")
            default: continue
            }
        }
        self.table = table
    }

    /// `<district>_<authority>`, then `<district>_UNKNOWN`, else `UNKNOWN`/`UNKNOWN` (the reference's
    /// `PostDistrictLaReplacer`).
    func merge(postalDistrict: String, localAuthority: String?) -> NHSArea {
        self.table["\(postalDistrict)_\(localAuthority ?? "UNKNOWN")"] ?? self.table["\(postalDistrict)_UNKNOWN"]
            ?? .unknown
    }
}

struct NHSAreaMergeError: Error, CustomStringConvertible {
    let line: Int
    var description: String { "pd-la-merge.csv line \(self.line) is not three quoted fields" }
}
