// The OpenAPI document and the routers agree.

import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import TestResultService

@Suite("OpenAPI document", .postgres(TestResultMigrations.group))
struct OpenAPITests {
    /// The operations of openapi.yaml with the ports they are documented on (both when the path names none).
    static func documentedOperations() throws -> [OpenAPIOperation] {
        let url = try #require(
            Bundle.module.url(forResource: "openapi", withExtension: "yaml") ?? Self.sourceDocument()
        )
        return try OpenAPIDocument.operations(in: url).map { operation in
            var operation = operation
            if operation.ports.isEmpty { operation.ports = [8003, 8013] }
            return operation
        }
    }

    private static func sourceDocument() -> URL? {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Services/TestResult/openapi.yaml")
    }

    @Test("every operation in openapi.yaml is routed on exactly the ports the document names")
    func everyDocumentedRouteExists() async throws {
        let operations = try Self.documentedOperations()
        // On PostgreSQL with the NHS path enabled, so its routes are mounted too.
        let database = try PostgresTestDatabase.require()
        let dependencies = TestResultDependencies.postgres(client: database.client, logger: database.logger)
        let configuration = try TestResultFixture.configuration(TestNHS.settings())
        let apps: [Int: any ApplicationProtocol] = [
            8003: try TestResultFixture.labApp(configuration: configuration, dependencies: dependencies),
            8013: try TestResultFixture.internalApp(configuration: configuration, dependencies: dependencies),
        ]
        #expect(operations.count == 20, "the parser found \(operations)")

        for operation in operations {
            for (port, app) in apps {
                let routed = try await Self.isRouted(operation, on: app)
                #expect(routed == operation.ports.contains(port), "\(operation): routed on \(port) is \(routed)")
            }
        }
    }

    @Test("each router mounts exactly the operations openapi.yaml documents on its port, on in-memory storage")
    func everyRouteIsDocumented() throws {
        let operations = try Self.documentedOperations()
        let configuration = try TestResultFixture.configuration(TestNHS.settings())
        let dependencies = TestResultDependencies.inMemory()
        let environment = ServiceEnvironment.testing()
        let metrics = TestResultMetrics(factory: environment.metricsFactory)
        func documented(on port: Int) -> Set<String> {
            Set(operations.filter { $0.ports.contains(port) }.map { "\($0.method) \($0.path)" })
        }
        try TestResult.buildPublicRouter(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment,
            metrics: metrics
        ).expectMounts(exactly: documented(on: 8003))
        TestResult.buildInternalRouter(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment,
            metrics: metrics
        ).expectMounts(exactly: documented(on: 8013), internalRoutes: InternalController.table)
    }

    private static func isRouted(_ operation: OpenAPIOperation, on app: some ApplicationProtocol) async throws -> Bool {
        let method = HTTPRequest.Method(rawValue: operation.method)!
        let body = method == .post ? ByteBuffer(string: "{}") : nil
        let status = try await app.test(.router) { client in
            try await client.execute(uri: operation.path, method: method, headers: .json, body: body).status
        }
        return status != .notFound && status != .methodNotAllowed
    }

    @Test("the lab port serves the document itself at /openapi.yaml")
    func servesDocument() async throws {
        let lab = try TestResultFixture.labApp(dependencies: .inMemory())

        try await lab.test(.router) { client in
            let response = try await client.execute(uri: "/openapi.yaml", method: .get)

            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("application/yaml") == true)
            #expect(response.body.text.hasPrefix("openapi: 3.1"))
        }
    }
}
