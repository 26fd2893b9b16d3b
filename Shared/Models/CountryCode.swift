// ISO 3166-1 alpha-2 country codes, as submission checks them and distribution buckets keys by them.

import Foundation

/// ISO 3166-1 alpha-2 country codes.
package enum CountryCode {
    /// Two upper-case letters that name an ISO 3166-1 country (the reference uses Java's `Locale.getISOCountries()`).
    package static func isValid(_ code: String) -> Bool {
        code.utf8.count == 2 && code.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
            && self.known.contains(code)
    }

    /// Foundation's two-letter regions, less the codes ISO 3166 only reserves (such as `EU`, `UN`, `XK`), which
    /// Java's list does not hold either: 249 countries.
    private static let known: Set<String> = Set(Locale.Region.isoRegions.map(\.identifier).filter { $0.count == 2 })
        .subtracting(["AC", "CP", "CQ", "DG", "EA", "EU", "EZ", "IC", "QO", "TA", "UN", "XK"])

    package static var count: Int { self.known.count }

    /// Every valid code, in alphabetical order: the numbering of `CountrySet`.
    package static let all: [String] = known.sorted()

    /// The EU member states and the EEA countries of the EU federation gateway: what phones may list as visited
    /// without configuration (the reference requires `SUPPORTED_COUNTRIES` to be set).
    package static let euGateway = [
        "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IS", "IT", "LI",
        "LT", "LU",
        "LV", "MT", "NL", "NO", "PL", "PT", "RO", "SE", "SI", "SK",
    ]
}
