// portal-service: the officers' web portal that issues teleTANs, and the administrator's command line.

import ENPersistence
import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO

/// `portal-service` serves the portal; `portal-service user add|disable|reset-totp|list` and
/// `portal-service audit --since <ISO 8601 time>` administer it (no self-registration).
@main
enum Portal: HTTPServiceEntrypoint {
    static let serviceName = "portal-service"
    static let migrationGroups = [PortalMigrations.group]

    static func main() async {
        let arguments = CommandLine.arguments
        let environment = ProcessInfo.processInfo.environment
        if arguments.count > 1, ["user", "audit"].contains(arguments[1]) {
            exit(await PortalCommands.run(Array(arguments.dropFirst()), environment: environment))
        }
        exit(await self.run(arguments: arguments, environment: environment))
    }

    typealias App = Application<RouterResponder<ServiceRequestContext>>

    static func buildApplication(
        configuration: PortalConfiguration,
        environment: ServiceEnvironment
    ) async throws -> App {
        let logger = environment.logger
        let client = configuration.database.makeClient(logger: logger)
        let upstream = UpstreamClient(peer: "verification-service", policy: configuration.upstream, logger: logger)
        let engine = PortalEngine(
            store: PortalStore(client: client, logger: logger),
            teleTANs: TeleTANClient(baseURL: configuration.verificationURL, upstream: upstream),
            signer: configuration.signer,
            policy: configuration.policy,
            authorities: configuration.authorities,
            clock: .system,
            logger: logger
        )
        let router = try await self.buildRouter(
            configuration: configuration,
            engine: engine,
            client: client,
            environment: environment
        )
        let cleanup = PeriodicTask(name: "session-cleanup", interval: .seconds(300), logger: logger) {
            let now = Date()
            try await engine.store.deleteExpiredSessions(
                idleBefore: now.addingTimeInterval(-configuration.policy.sessionIdleTimeout.timeInterval),
                createdBefore: now.addingTimeInterval(-configuration.policy.sessionLifetime.timeInterval)
            )
        }
        return Application(
            router: router,
            configuration: .init(
                address: .hostname(configuration.http.host, port: configuration.http.port),
                serverName: nil
            ),
            services: [client, upstream, cleanup],
            logger: environment.logger.listener("app")
        )
    }

    /// The router: standard middleware with the security headers, the Host allowlist, health, metrics, the pages.
    static func buildRouter(
        configuration: PortalConfiguration,
        engine: PortalEngine,
        client: PostgresClient,
        environment: ServiceEnvironment
    ) async throws -> Router<ServiceRequestContext> {
        let router = Router.service(
            maxBodyBytes: 16 * 1024,
            checks: [PostgresReadinessCheck(client: client)],
            environment: environment,
            responseHeaders: [
                .contentSecurityPolicy:
                    "default-src 'self'; script-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
                HTTPField.Name("X-Frame-Options")!: "DENY",
                HTTPField.Name("Referrer-Policy")!: "no-referrer",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ]
        )
        router.add(middleware: HostAllowlistMiddleware(allowed: configuration.allowedHosts))
        let stylesheet =
            try Bundle.module.url(forResource: "portal", withExtension: "css", subdirectory: "Resources/static")
            .map { try String(contentsOf: $0, encoding: .utf8) } ?? ""
        PortalController(
            engine: engine,
            pages: try await Pages.load(),
            secureCookies: configuration.secureCookies,
            stylesheet: stylesheet
        )
        .addRoutes(to: router)
        return router
    }
}
