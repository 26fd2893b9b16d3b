// The object keys of the CDN tree (cwa-server §3.5).

/// Every object key the distribution writes, in one place.
enum CDNPaths {
    static let root = "version"
    /// The v2 root index keeps the reference's odd name.
    static let rootV2 = "version/index-v2"
    static let keyCountries = "version/v1/diagnosis-keys/country"

    static func dates(_ country: String) -> String { "\(self.keyCountries)/\(country)/date" }

    static func day(_ country: String, _ day: Int64) -> String {
        "\(self.dates(country))/\(DistributionTime.isoDate(day: day))"
    }

    static func hours(_ country: String, _ day: Int64) -> String { "\(self.day(country, day))/hour" }

    /// Hours are numbered within their day, without zero padding.
    static func hour(_ country: String, _ hour: Int64) -> String {
        let day = DistributionTime.day(ofHour: hour)
        return "\(self.hours(country, day))/\(hour - day * 24)"
    }

    /// The app configurations: the v2 message types at both the v1 and the v2 paths, as the reference publishes them.
    static let appConfigurations: [(key: String, platform: Platform)] = [
        ("version/v1/app_config_ios", .ios), ("version/v1/app_config_android", .android),
        ("version/v2/app_config_ios", .ios), ("version/v2/app_config_android", .android),
    ]

    enum Platform: Sendable { case ios, android }

    /// `version/v1/twp` (unencrypted warnings) or `version/v2/twp` (encrypted check-in reports).
    static func traceWarnings(_ version: Int) -> String { "version/v\(version)/twp/country" }

    static func traceWarningHours(_ version: Int, _ country: String) -> String {
        "\(self.traceWarnings(version))/\(country)/hour"
    }

    static func traceWarningHour(_ version: Int, _ country: String, _ hour: Int64) -> String {
        "\(self.traceWarningHours(version, country))/\(hour)"
    }
}
