// The contract every service's configuration type fulfils.

package import ENPersistence

/// A service's typed, validated configuration.
package protocol ServiceConfiguration: Sendable {
    /// Reads every setting; problems are recorded in `settings`, not thrown, so all of them can be reported.
    init(settings: SettingsReader)
    /// Logging settings (`LOG_LEVEL`, `LOG_FORMAT`).
    var logging: LoggingConfiguration { get }
    /// The service's database.
    var database: DatabaseConfiguration { get }
}

extension ServiceConfiguration {
    /// Reads and validates; throws every problem at once.
    package static func load(from settings: SettingsReader) throws(ConfigurationError) -> Self {
        let configuration = Self(settings: settings)
        try settings.finish()
        return configuration
    }
}
