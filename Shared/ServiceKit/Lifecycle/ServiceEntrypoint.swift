// The shared `main` of every service binary: command dispatch, configuration, bootstrap, migrations, the run.

package import ENPersistence
import Foundation
package import Hummingbird
package import Logging
import Metrics
import Prometheus
package import ServiceLifecycle
import UnixSignals

/// What a service's `@main` type provides. `main()` comes from the extension below, so no binary has start-up code
/// of its own: the kit parses the command line, routes to a command, and owns every exit code.
package protocol ServiceEntrypoint {
    associatedtype Configuration: ServiceConfiguration
    associatedtype Dependencies: ServiceDependencies
    associatedtype App: ApplicationProtocol

    /// The binary's name, also the logger label (`test-result-service`).
    static var serviceName: String { get }
    /// The schema groups the service owns, applied by `--migrate-only` and by auto-migration.
    static var migrationGroups: [MigrationGroup] { get }
    /// The binary's commands (`serve`, `run`, `user`, …); the default is `[.serve]`.
    static var commands: [ServiceCommand<Self>] { get }
    /// The command run when the first argument names none; `nil` makes naming one mandatory.
    static var defaultCommand: String? { get }
    /// Buckets of the service's histograms (`Recorder`s with `aggregate: true`) by label; others get the defaults.
    static var histogramBuckets: [String: [Double]] { get }

    /// The live dependencies (database pool, peers' clients) the configuration describes.
    static func makeDependencies(configuration: Configuration, logger: Logger) throws -> Dependencies
    /// Pure assembly of the running application: no global bootstrap, no environment, no fixed ports.
    static func buildApplication(
        configuration: Configuration,
        dependencies: Dependencies,
        environment: ServiceEnvironment
    ) async throws -> App
}

/// What a service's dependencies must expose to the kit.
package protocol ServiceDependencies: Sendable {
    /// Long-lived clients (the database pool, HTTP clients) that run as services before the servers start and
    /// stop after them.
    var services: [any Service] { get }
}

extension ServiceEntrypoint {
    package static var commands: [ServiceCommand<Self>] { [.serve] }
    package static var defaultCommand: String? { "serve" }
    package static var histogramBuckets: [String: [Double]] { [:] }

    /// Runs the command the arguments name and exits with its code.
    package static func main() async {
        let code = await self.run(arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment)
        exit(code)
    }

    /// What `main()` does, returning the exit code: 0 success, 1 failure, 2 a usage or configuration error.
    package static func run(arguments: [String], environment: [String: String]) async -> Int32 {
        let first = arguments.dropFirst().first
        if let first, ["help", "--help", "-h"].contains(first), self.commands.count > 1 {
            print(self.usage)
            _ = self.start(arguments: [arguments[0], "--help"], environment: environment)
            return 0
        }
        let named = first.flatMap { name in self.commands.first { $0.name == name } }
        var rest = arguments
        let command: ServiceCommand<Self>
        if let named {
            rest.remove(at: 1)
            command = named
        } else if let first, !first.hasPrefix("-") {
            self.fail("unknown command '\(first)'\n\(self.usage)")
            return 2
        } else if let name = self.defaultCommand, let fallback = self.commands.first(where: { $0.name == name }) {
            command = fallback
        } else {
            self.fail(self.usage)
            return 2
        }
        switch command.action {
        case .serve: return await self.serve(arguments: rest, environment: environment)
        case .job(let failure, let body):
            return await self.job(arguments: rest, environment: environment, failure, body)
        case .tool(let body): return await body(Array(arguments.dropFirst()), environment)
        }
    }

    /// One line per command, for `--help` and usage errors.
    package static var usage: String {
        let width = self.commands.map(\.name.count).max() ?? 0
        let lines = self.commands.map { command in
            let marker = command.name == self.defaultCommand ? " (the default)" : ""
            return
                "  \(command.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(command.summary)\(marker)"
        }
        return "usage: \(self.serviceName) \(self.commands.map(\.name).joined(separator: "|")) [--setting value ...]\n"
            + lines.joined(separator: "\n") + "\n  --help lists every setting"
    }

    /// `serve`: applies pending migrations (with `--migrate-only` or `DATABASE_AUTO_MIGRATE`; `--migrate-only` then
    /// exits), then runs the application until SIGTERM/SIGINT: 7 s to drain in-flight requests, then 2 s for
    /// cancelled work to end, together below the 10 s an orchestrator grants.
    private static func serve(arguments: [String], environment: [String: String]) async -> Int32 {
        let ready: Startup<Configuration>.Ready
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
            let dependencies = try self.makeDependencies(configuration: configuration, logger: logger)
            let app = try await self.buildApplication(
                configuration: configuration,
                dependencies: dependencies,
                environment: ready.environment
            )
            var groupConfiguration = ServiceGroupConfiguration(
                services: [.init(service: app)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
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

    /// A job: its body runs once with the live dependencies' services running beside it, then the process exits.
    private static func job(
        arguments: [String],
        environment: [String: String],
        _ failure: String,
        _ body: @Sendable (Configuration, Dependencies, ServiceEnvironment) async throws -> Void
    ) async -> Int32 {
        let ready: Startup<Configuration>.Ready
        switch self.start(arguments: arguments, environment: environment) {
        case .exit(let code): return code
        case .ready(let value): ready = value
        }
        let logger = ready.environment.logger
        do {
            let dependencies = try self.makeDependencies(configuration: ready.configuration, logger: logger)
            try await withRunningServices(dependencies.services) {
                try await body(ready.configuration, dependencies, ready.environment)
            }
            return 0
        } catch {
            logger.critical("\(failure)", metadata: ErrorMetadata.described(error))
            return 1
        }
    }

    /// Parses the configuration (every problem printed, exit 2; `--help` prints the settings, exit 0), then
    /// bootstraps logging and metrics.
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
            self.fail(error.description)
            return .exit(2)
        }

        LoggingBootstrap.bootstrap(configuration.logging)
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.valueHistogramBuckets = self.histogramBuckets
        MetricsSystem.bootstrap(factory)
        let logger = Logger(label: self.serviceName)
        let serviceEnvironment = ServiceEnvironment(logger: logger, metricsRegistry: registry, metricsFactory: factory)
        return .ready(.init(configuration: configuration, environment: serviceEnvironment, migrateOnly: migrateOnly))
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

    private static func fail(_ message: String) {
        FileHandle.standardError.write(Data("\(self.serviceName): \(message)\n".utf8))
    }
}

/// The outcome of parsing a binary's arguments: go on with the configuration, or exit with a code.
package enum Startup<Configuration: Sendable> {
    package struct Ready: Sendable {
        package var configuration: Configuration
        package var environment: ServiceEnvironment
        package var migrateOnly: Bool
    }

    case ready(Ready)
    case exit(Int32)
}

/// Runs `body` while `services` (a database pool, HTTP clients) run beside it, then cancels them: what a one-shot
/// job or command needs instead of a service group.
package func withRunningServices<Result: Sendable>(
    _ services: [any Service],
    _ body: () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for service in services {
            group.addTask { try await service.run() }
        }
        defer { group.cancelAll() }
        return try await body()
    }
}
