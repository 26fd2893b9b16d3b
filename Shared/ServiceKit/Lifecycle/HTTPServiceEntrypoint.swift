// The shared `main` of every HTTP service binary.

package import ENPersistence
import Foundation
package import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import UnixSignals

/// What a service's `@main` type provides; `main()` comes from the extension below, so the binaries share all
/// bootstrap code.
package protocol HTTPServiceEntrypoint {
    associatedtype Configuration: ServiceConfiguration
    associatedtype App: ApplicationProtocol

    /// The binary's name, also the logger label (`test-result-service`).
    static var serviceName: String { get }
    /// The schema groups the service owns, applied by `--migrate-only` and by auto-migration.
    static var migrationGroups: [MigrationGroup] { get }
    /// Pure assembly of the running application from configuration and the process environment.
    static func buildApplication(configuration: Configuration, environment: ServiceEnvironment) async throws -> App
}

extension HTTPServiceEntrypoint {
    /// Parses the configuration (every problem printed, exit 2), bootstraps logging and metrics, applies pending
    /// migrations (with `--migrate-only` or `DATABASE_AUTO_MIGRATE`; `--migrate-only` then exits), then runs the
    /// application until SIGTERM/SIGINT, draining in-flight requests for at most 7 seconds, and exits 0.
    package static func main() async {
        let code = await self.run(arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment)
        exit(code)
    }

    /// Runs the service as `main()` does and returns the exit code.
    package static func run(arguments: [String], environment: [String: String]) async -> Int32 {
        let ready: (configuration: Configuration, environment: ServiceEnvironment, migrateOnly: Bool)
        switch self.start(arguments: arguments, environment: environment) {
        case .exit(let code): return code
        case .ready(let value): ready = value
        }
        let configuration = ready.configuration
        let logger = ready.environment.logger
        if ready.migrateOnly || configuration.database.autoMigrate {
            let code = await self.migrate(configuration: configuration, logger: logger)
            if ready.migrateOnly || code != 0 { return code }
        }
        do {
            let app = try await self.buildApplication(configuration: configuration, environment: ready.environment)
            var groupConfiguration = ServiceGroupConfiguration(
                services: [.init(service: app)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
            // Together below the 10 s that ARCHITECTURE §5 allows: 7 s to drain, then 2 s for cancelled work to end.
            groupConfiguration.maximumGracefulShutdownDuration = .seconds(7)
            groupConfiguration.maximumCancellationDuration = .seconds(2)
            logger.info(
                "Starting",
                metadata: ["service": "\(self.serviceName)", "database": "\(configuration.database)"]
            )
            try await ServiceGroup(configuration: groupConfiguration).run()
            logger.info("Stopped")
            return 0
        } catch {
            logger.critical("Service failed", metadata: ErrorMetadata.described(error))
            return 1
        }
    }

    /// Parses the configuration (every problem printed, exit 2; `--help` prints the settings, exit 0), then bootstraps
    /// logging and metrics. Also the start of binaries that run jobs besides serving (distribution's `run` mode).
    package static func start(arguments: [String], environment: [String: String]) -> Startup<Configuration> {
        let settings = SettingsReader(arguments: arguments, environment: environment)
        let migrateOnly = settings.bool(
            "MIGRATE_ONLY",
            default: false,
            help: "Apply pending database migrations, then exit."
        )
        let configuration = Configuration(settings: settings)
        if settings.helpRequested {
            print("\(self.serviceName)\n\n\(settings.helpText)")
            return .exit(0)
        }
        do {
            try settings.finish()
        } catch {
            FileHandle.standardError.write(Data("\(self.serviceName): \(error.description)\n".utf8))
            return .exit(2)
        }

        LoggingBootstrap.bootstrap(configuration.logging)
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        MetricsSystem.bootstrap(factory)
        let logger = Logger(label: self.serviceName)
        let serviceEnvironment = ServiceEnvironment(logger: logger, metricsRegistry: registry, metricsFactory: factory)
        return .ready((configuration, serviceEnvironment, migrateOnly))
    }

    /// Applies pending migrations before the application is built. Not in `beforeServerStarts`: Hummingbird starts
    /// the application's services (internal listener, background jobs) alongside that prelude, so they could
    /// touch the schema before it exists.
    private static func migrate(configuration: Configuration, logger: Logger) async -> Int32 {
        do {
            let applied = try await MigrationRunner.run(
                groups: self.migrationGroups,
                database: configuration.database,
                logger: logger
            )
            logger.info("Migrations complete", metadata: ["migration.applied": "\(applied.count)"])
            return 0
        } catch {
            logger.critical("Migration failed", metadata: ErrorMetadata.described(error))
            return 1
        }
    }
}

/// The outcome of parsing a binary's arguments: go on with the configuration, or exit with a code.
package enum Startup<Configuration: Sendable> {
    case ready((configuration: Configuration, environment: ServiceEnvironment, migrateOnly: Bool))
    case exit(Int32)
}
