// Assembly of submission-service: one listener with the app API.

import ENServiceKit
import Foundation
import Hummingbird
import HummingbirdCore
import Logging

extension Submission {
    typealias App = Application<RouterResponder<ServiceRequestContext>>

    static func buildApplication(
        configuration: SubmissionConfiguration,
        environment: ServiceEnvironment
    ) async throws -> App {
        let dependencies = SubmissionDependencies.live(configuration: configuration, logger: environment.logger)
        return try self.buildApplication(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment
        )
    }

    /// The application; the database pool and the verification client run as its services, so shutdown stops
    /// the server first and the clients last.
    static func buildApplication(
        configuration: SubmissionConfiguration,
        dependencies: SubmissionDependencies,
        environment: ServiceEnvironment
    ) throws -> App {
        Application(
            router: try self.buildRouter(
                Parts(configuration: configuration, dependencies: dependencies, environment: environment)
            ),
            configuration: .init(
                address: .hostname(configuration.http.host, port: configuration.http.port),
                serverName: nil
            ),
            services: dependencies.services,
            logger: environment.logger.listener("app")
        )
    }

    /// What the router is built from.
    struct Parts: Sendable {
        let configuration: SubmissionConfiguration
        let dependencies: SubmissionDependencies
        let environment: ServiceEnvironment
        let metrics: SubmissionMetrics
        let engine: SubmissionEngine
        let delays: [SubmissionEndpoint: FakeDelay]

        init(
            configuration: SubmissionConfiguration,
            dependencies: SubmissionDependencies,
            environment: ServiceEnvironment
        ) {
            self.configuration = configuration
            self.dependencies = dependencies
            self.environment = environment
            self.metrics = SubmissionMetrics(factory: environment.metricsFactory)
            self.engine = SubmissionEngine(
                policy: configuration.policy,
                verifier: dependencies.verifier,
                store: dependencies.store,
                clock: dependencies.clock,
                metrics: self.metrics,
                logger: environment.logger
            )
            self.delays = Dictionary(
                uniqueKeysWithValues: SubmissionEndpoint.allCases.map {
                    ($0, FakeDelay(configuration.fakeDelay))
                }
            )
        }

        var controller: SubmissionController {
            SubmissionController(engine: self.engine, delays: self.delays, metrics: self.metrics)
        }
    }

    /// The app API under `/version/v1`, plus health, metrics and the OpenAPI document. Every answer carries the
    /// reference's `Content-Security-Policy`.
    static func buildRouter(
        _ parts: Parts,
        controller: SubmissionController? = nil
    ) throws -> Router<ServiceRequestContext> {
        let router = Router.service(
            maxBodyBytes: parts.configuration.maxRequestBytes,
            checks: parts.dependencies.readinessChecks,
            environment: parts.environment,
            responseHeaders: [.contentSecurityPolicy: "default-src 'self'"]
        )
        try DocumentController.openAPI(in: Bundle.module).addRoutes(to: router)
        (controller ?? parts.controller).addRoutes(to: router.group("version/v1"))
        return router
    }
}
