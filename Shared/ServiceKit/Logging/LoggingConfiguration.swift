// How a service writes its log.

package import Logging

/// `LOG_LEVEL` and `LOG_FORMAT`.
package struct LoggingConfiguration: Sendable, Equatable {
    /// Line format on standard output.
    package enum Format: String, Sendable, CaseIterable {
        /// Human-readable lines.
        case text
        /// One JSON object per line, for log collectors.
        case json
    }

    package var level: Logger.Level
    package var format: Format

    package init(level: Logger.Level = .info, format: Format = .text) {
        self.level = level
        self.format = format
    }

    package init(settings: SettingsReader) {
        self.level = settings.choice(
            "LOG_LEVEL",
            default: Logger.Level.info,
            help: "trace, debug, info, notice, warning, error or critical."
        )
        self.format = settings.choice("LOG_FORMAT", default: Format.text, help: "text or json.")
    }
}
