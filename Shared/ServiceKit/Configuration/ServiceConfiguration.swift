// The contract every service's configuration type fulfils, and the settings every service reads the same way.

package import ENPersistence

/// A service's typed, validated configuration.
package protocol ServiceConfiguration: Sendable {
    /// Reads every setting; problems are recorded in `settings`, not thrown, so all of them can be reported.
    init(settings: SettingsReader)
    /// The public listener, the database and the logging, read by every service alike.
    var basics: ServiceBasics { get }
}

extension ServiceConfiguration {
    /// Reads and validates; throws every problem at once.
    package static func load(from settings: SettingsReader) throws(ConfigurationError) -> Self {
        let configuration = Self(settings: settings)
        try settings.finish()
        return configuration
    }

    /// The public listener (`HTTP_HOST`, `HTTP_PORT`).
    package var http: ListenAddress { self.basics.http }
    /// Logging settings (`LOG_LEVEL`, `LOG_FORMAT`).
    package var logging: LoggingConfiguration { self.basics.logging }
    /// The service's database.
    package var database: DatabaseConfiguration { self.basics.database }
}

/// What every service reads first and alike: where its public listener listens (`HTTP_HOST`, `HTTP_PORT`), its
/// database (`DATABASE_*`) and its logging (`LOG_LEVEL`, `LOG_FORMAT`).
package struct ServiceBasics: Sendable {
    package var http: ListenAddress
    package var database: DatabaseConfiguration
    package var logging: LoggingConfiguration

    /// Reads the settings; `port` is `HTTP_PORT`'s default and `purpose` what the listener serves (for `--help`).
    package init(settings: SettingsReader, port: Int, purpose: String) {
        self.http = ListenAddress(settings: settings, prefix: "HTTP", defaultPort: port, purpose: purpose)
        self.database = DatabaseConfiguration(settings: settings)
        self.logging = LoggingConfiguration(settings: settings)
    }
}

/// The listeners besides the public one of a service with an internal API: the internal API
/// (`INTERNAL_HTTP_HOST`, `INTERNAL_HTTP_PORT`), never routed by the gateway, and `/metrics` alone (`METRICS_HOST`,
/// `METRICS_PORT`), for the monitoring network policy. Each must listen on a port of its own.
package struct InternalListeners: Sendable {
    package var internalHTTP: ListenAddress
    package var metrics: ListenAddress

    package init(settings: SettingsReader, beside http: ListenAddress, internalPort: Int, metricsPort: Int) {
        self.internalHTTP = ListenAddress(
            settings: settings,
            prefix: "INTERNAL_HTTP",
            defaultPort: internalPort,
            purpose: "internal API"
        )
        self.internalHTTP.requireDistinctPort(from: [http], settings: settings)
        self.metrics = MetricsListener.address(
            settings: settings,
            defaultPort: metricsPort,
            otherListeners: [http, self.internalHTTP]
        )
    }
}

extension SettingsReader {
    /// `HTTP_MAX_BODY_SIZE` (or the service's own `setting`): the largest request body a listener reads.
    package func maxBodySize(
        _ setting: String = "HTTP_MAX_BODY_SIZE",
        default value: Int,
        range: ClosedRange<Int>,
        of what: String = "request body"
    ) -> Int {
        self.int(
            setting,
            default: value,
            range: range,
            help: "Largest \(what) in bytes; larger ones get 413 before they are read."
        )
    }
}
