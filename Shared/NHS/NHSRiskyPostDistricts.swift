// Risky post districts of the NHS family (nhs §6): the upload's JSON, checked entry by entry against the tier
// metadata, and the two lists phones download.

import ENServiceKit
import Foundation

/// A checked upload: every post district with its risk and tier, every local authority with its tier.
package struct NHSRiskyPostDistricts: Sendable, Equatable {
    package struct Indicators: Codable, Sendable, Equatable {
        package var riskIndicator: String?
        package var tierIndicator: String?

        package init(riskIndicator: String? = nil, tierIndicator: String?) {
            self.riskIndicator = riskIndicator
            self.tierIndicator = tierIndicator
        }
    }

    package var postDistricts: [String: Indicators]
    package var localAuthorities: [String: Indicators]

    package init(postDistricts: [String: Indicators], localAuthorities: [String: Indicators]) {
        self.postDistricts = postDistricts
        self.localAuthorities = localAuthorities
    }

    package static let maxBytes = 1_048_576
    package static let riskIndicators: Set<String> = ["H", "M", "L"]

    /// One entry of an upload and what is wrong with it (`nil`: nothing), for an officer's preview.
    package struct Entry: Sendable, Equatable {
        package enum Kind: String, Sendable {
            case postDistrict = "post district"
            case localAuthority = "local authority"
        }
        package var kind: Kind
        package var code: String
        package var indicators: Indicators
        package var problem: String?
    }

    /// The upload, or the first problem (the message after `validation error: `).
    package static func parse(_ bytes: [UInt8], tiers: Set<String>?) -> Result<Self, NHSRiskyVenueCSV.Problem> {
        self.entries(bytes, tiers: tiers).flatMap(self.upload)
    }

    /// Every entry with its own problem (`decode`), the tier indicators checked against `tiers` when given.
    package static func entries(
        _ bytes: [UInt8],
        tiers: Set<String>?
    ) -> Result<[Entry], NHSRiskyVenueCSV.Problem> {
        self.decode(bytes).map { entries in tiers.map { self.checking(entries, against: $0) } ?? entries }
    }

    /// Every entry with its own problem, post districts first, each map in code order; or a problem of the whole
    /// upload. The checks that need no tier metadata, with the reference's messages (`RiskyPostCodesMapper`): both
    /// maps present (empty ones allowed), a post district non-blank and at most 20 characters with a risk indicator
    /// of H, M or L, a local authority non-blank; and, beyond the reference, each code of its documented shape.
    package static func decode(_ bytes: [UInt8]) -> Result<[Entry], NHSRiskyVenueCSV.Problem> {
        struct Upload: Decodable {
            var postDistricts: [String: Indicators]
            var localAuthorities: [String: Indicators]
        }
        guard bytes.count <= Self.maxBytes else { return .failure(.init("payload is more than 1MB")) }
        guard let upload = try? JSONDecoder().decode(Upload.self, from: Data(bytes)) else {
            return .failure(.init("unable to deserialize payload"))
        }
        let isBlank = { (text: String) in text.allSatisfy(\.isWhitespace) }
        let postDistricts = upload.postDistricts.sorted { $0.key < $1.key }.map { code, indicators in
            var entry = Entry(kind: .postDistrict, code: code, indicators: indicators)
            if isBlank(code) {
                entry.problem = "Invalid post district - no value"
            } else if code.utf16.count > 20 {  // the reference counts UTF-16 units (Java's length())
                entry.problem = "Invalid post district longer than 20 characters: \(code)"
            } else if !Self.isPostDistrict(code) {
                entry.problem = "Invalid post district: \(code) is not a UK postcode district such as M1, CF10 or SW1A"
            } else if !Self.riskIndicators.contains(indicators.riskIndicator ?? "") {
                entry.problem =
                    "Invalid risk indicator: \(indicators.riskIndicator ?? "null") for post district: \(code)"
            }
            return entry
        }
        let localAuthorities = upload.localAuthorities.sorted { $0.key < $1.key }.map { code, indicators in
            var entry = Entry(
                kind: .localAuthority,
                code: code,
                indicators: Indicators(tierIndicator: indicators.tierIndicator)
            )
            if isBlank(code) {
                entry.problem = "Invalid local authority - no value"
            } else if !Self.isLocalAuthority(code) {
                entry.problem =
                    "Invalid local authority: \(code.prefix(40)) is not a GSS code of a letter and 8 digits such as E07000240"
            }
            return entry
        }
        return .success(postDistricts + localAuthorities)
    }

    /// A UK postcode district (the outward code): one or two letters, a digit, and a digit or letter or nothing
    /// (`M1`, `CF10`, `SW1A`), in capitals. The reference checks only the length; whatever passed was published
    /// as it came, a spreadsheet formula or a page of text too: the shape is the intent.
    package static func isPostDistrict(_ code: String) -> Bool {
        let bytes = Array(code.utf8)
        let letters = bytes.prefix { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }.count
        guard (1...2).contains(letters), (letters + 1...letters + 2).contains(bytes.count),
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[letters])
        else { return false }
        return bytes.dropFirst(letters + 1).allSatisfy { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
    }

    /// A GSS code of a local authority: a capital letter and eight digits (`E07000240`, `W06000015`). The reference
    /// does not check it (nhs §6); the published list must hold only codes the apps can match.
    package static func isLocalAuthority(_ code: String) -> Bool {
        let bytes = Array(code.utf8)
        return bytes.count == 9 && (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(bytes[0])
            && bytes.dropFirst().allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// `entries` with the reference's message on every entry that had no problem yet and whose tier indicator is not
    /// a key of the tier metadata.
    package static func checking(_ entries: [Entry], against tiers: Set<String>) -> [Entry] {
        entries.map { entry in
            guard entry.problem == nil, !tiers.contains(entry.indicators.tierIndicator ?? "") else { return entry }
            var checked = entry
            checked.problem =
                "Invalid tier indicator: \(entry.indicators.tierIndicator ?? "null") for \(entry.kind.rawValue): \(entry.code)"
            return checked
        }
    }

    /// The upload of checked entries, or the first entry's problem.
    package static func upload(_ entries: [Entry]) -> Result<Self, NHSRiskyVenueCSV.Problem> {
        if let problem = entries.lazy.compactMap(\.problem).first { return .failure(.init(problem)) }
        var upload = Self(postDistricts: [:], localAuthorities: [:])
        for entry in entries {
            switch entry.kind {
            case .postDistrict: upload.postDistricts[entry.code] = entry.indicators
            case .localAuthority: upload.localAuthorities[entry.code] = entry.indicators
            }
        }
        return .success(upload)
    }

    /// The upload as portal-service hands it to distribution-service: the upload's own shape, keys sorted.
    package var json: [UInt8] {
        Self.encode(["postDistricts": self.postDistricts, "localAuthorities": self.localAuthorities])
    }

    /// `/distribution/risky-post-districts`: `{"postDistricts":{"<code>":"H|M|L"}}`.
    package var v1: [UInt8] {
        Self.encode(["postDistricts": self.postDistricts.mapValues { $0.riskIndicator ?? "" }])
    }

    /// `/distribution/risky-post-districts-v2`: the tiers of post districts and local authorities, and the whole tier
    /// metadata as `riskLevels` (its bytes as distribution-service publishes them).
    package func v2(metadata: [UInt8]) -> [UInt8] {
        let postDistricts = Self.encode(self.postDistricts.mapValues { $0.tierIndicator ?? "" })
        let localAuthorities = Self.encode(self.localAuthorities.mapValues { $0.tierIndicator ?? "" })
        return Array(#"{"postDistricts":"#.utf8) + postDistricts + Array(#","localAuthorities":"#.utf8)
            + localAuthorities + Array(#","riskLevels":"#.utf8) + metadata + Array("}".utf8)
    }

    /// The keys of a tier metadata document (`{"EN.Tier1":{…},…}`); empty when it is not a JSON object.
    package static func tiers(ofMetadata metadata: [UInt8]) -> Set<String> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(metadata)) as? [String: Any] else { return [] }
        return Set(object.keys)
    }

    private static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Dictionaries of strings always encode.
        return (try? Array(encoder.encode(value))) ?? Array("{}".utf8)
    }
}
