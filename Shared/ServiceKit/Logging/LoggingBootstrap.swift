// The one place that configures the global logging system, called once from `main`.

import Logging

/// Bootstraps swift-log for a service process. Never called by `buildApplication` or by tests.
package enum LoggingBootstrap {
    package static func bootstrap(_ configuration: LoggingConfiguration) {
        let level = configuration.level
        switch configuration.format {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardOutput(label: label)
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in
                JSONLogHandler(label: label, level: level)
            }
        }
    }
}
