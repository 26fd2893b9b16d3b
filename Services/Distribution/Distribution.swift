// distribution-service: assembles, signs and publishes the CDN tree phones download (cwa-server §3).

import AsyncHTTPClient
import ENPersistence
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceLifecycle

/// The binary: `distribution-service run` does one run and exits (0 on success, 1 on failure, 2 on bad
/// configuration), for a CronJob; `distribution-service serve` repeats the run every `DISTRIBUTION_INTERVAL` and
/// serves `/health/*` and `/metrics`.
@main
enum Distribution: HTTPServiceEntrypoint {
    static let serviceName = "distribution-service"
    /// Distribution reads and prunes the `keys` schema that submission owns; it has none of its own.
    static let migrationGroups: [MigrationGroup] = []
    static let usage = """
        usage: distribution-service run|serve [--setting value ...]
          run    one distribution run, then exit (0 success, 1 failure, 2 bad configuration)
          serve  a run at start and every DISTRIBUTION_INTERVAL, with /health/* and /metrics
          --help lists every setting
        """

    static func main() async {
        var arguments = CommandLine.arguments
        let mode = arguments.count > 1 ? arguments.remove(at: 1) : ""
        let environment = ProcessInfo.processInfo.environment
        switch mode {
        case "run": exit(await self.runOnce(arguments: arguments, environment: environment))
        case "serve": exit(await self.run(arguments: arguments, environment: environment))
        case "--help", "-h", "help":
            print(self.usage)
            _ = self.start(arguments: arguments + ["--help"], environment: environment)
            exit(0)
        default:
            FileHandle.standardError.write(Data("\(self.usage)\n".utf8))
            exit(2)
        }
    }

    /// One run with its own database pool and, for S3, HTTP client.
    static func runOnce(arguments: [String], environment: [String: String]) async -> Int32 {
        let ready: (configuration: DistributionConfiguration, environment: ServiceEnvironment, migrateOnly: Bool)
        switch self.start(arguments: arguments, environment: environment) {
        case .exit(let code): return code
        case .ready(let value): ready = value
        }
        let logger = ready.environment.logger
        let client = ready.configuration.database.makeClient(logger: logger)
        let store = DistributionStoreFactory.make(ready.configuration.objectStore, logger: logger)
        do {
            try await store.check()
            let report = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                return try await DistributionRun(
                    configuration: ready.configuration,
                    client: client,
                    store: store.store,
                    clock: .system,
                    metrics: DistributionMetrics(factory: ready.environment.metricsFactory),
                    logger: logger
                ).run()
            }
            try await store.shutdown()
            _ = report
            return 0
        } catch {
            logger.critical("Distribution run failed", metadata: ErrorMetadata.described(error))
            try? await store.shutdown()
            return 1
        }
    }

    typealias App = Application<RouterResponder<ServiceRequestContext>>

    /// `serve`: health and metrics on the HTTP port; the runs as a periodic task of the application.
    static func buildApplication(
        configuration: DistributionConfiguration,
        environment: ServiceEnvironment
    ) async throws -> App {
        let logger = environment.logger
        let client = configuration.database.makeClient(logger: logger)
        let store = DistributionStoreFactory.make(configuration.objectStore, logger: logger)
        let run = DistributionRun(
            configuration: configuration,
            client: client,
            store: store.store,
            clock: .system,
            metrics: DistributionMetrics(factory: environment.metricsFactory),
            logger: logger
        )
        let task = PeriodicTask(name: "distribution", interval: configuration.interval, logger: logger) {
            try await store.check()
            _ = try await run.run()
        }
        let router = Router.service(
            maxBodyBytes: 1024,
            checks: [PostgresReadinessCheck(client: client)],
            environment: environment
        )
        return Application(
            router: router,
            configuration: .init(
                address: .hostname(configuration.http.host, port: configuration.http.port),
                serverName: nil
            ),
            services: [client, store, task],
            logger: environment.logger.listener("app")
        )
    }
}

/// The configured object store, with what it needs started and stopped.
struct DistributionStoreFactory: Service {
    let store: any ObjectStore
    private let httpClient: HTTPClient?
    private let s3: S3ObjectStore?

    static func make(_ choice: DistributionConfiguration.ObjectStoreChoice, logger: Logger) -> DistributionStoreFactory
    {
        switch choice {
        case .directory(let root):
            return DistributionStoreFactory(store: DirectoryStore(root: root), httpClient: nil, s3: nil)
        case .s3(let configuration):
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let s3 = S3ObjectStore(configuration: configuration, httpClient: http, logger: logger)
            return DistributionStoreFactory(store: s3, httpClient: http, s3: s3)
        }
    }

    /// Fails when the store cannot take the tree (a missing bucket fails the run, as in the reference).
    func check() async throws {
        try await self.s3?.checkBucket()
    }

    func shutdown() async throws {
        try await self.httpClient?.shutdown()
    }

    /// As a service: shuts the HTTP client down when the application stops.
    func run() async throws {
        try? await gracefulShutdown()
        try await self.shutdown()
    }
}
