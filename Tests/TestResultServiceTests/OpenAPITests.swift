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

@Suite("OpenAPI document")
struct OpenAPITests {
    /// One documented operation and the ports it is documented on (the path's `servers`, or both when it has none).
    struct Operation: CustomStringConvertible {
        let method: String
        let path: String
        var ports: Set<Int>
        var description: String { "\(self.method.uppercased()) \(self.path) on \(self.ports.sorted())" }
    }

    /// The operations under `paths:` of the document (two-space path keys, four-space method and `servers` keys).
    static func documentedOperations() throws -> [Operation] {
        let url = try #require(Bundle.module.url(forResource: "openapi", withExtension: "yaml") ?? Self.sourceDocument())
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let methods: Set<String> = ["get", "post", "put", "delete", "patch", "head", "options"]
        var operations: [Operation] = []
        var inPaths = false
        var path: String?
        var pathOperations: [Operation] = []
        var pathPorts: Set<Int> = []
        func flush() {
            operations += pathOperations.map { operation in
                var operation = operation
                operation.ports = pathPorts.isEmpty ? [8003, 8013] : pathPorts
                return operation
            }
            pathOperations = []
            pathPorts = []
        }
        for line in lines {
            if !line.hasPrefix(" ") && !line.isEmpty {
                if inPaths { flush() }
                inPaths = line.hasPrefix("paths:")
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /") {
                flush()
                path = String(line.dropFirst(2).prefix { $0 != ":" })
            } else if line.hasPrefix("      - url:"), let port = line.split(separator: ":").last.flatMap({ Int($0) }) {
                pathPorts.insert(port)
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), let path {
                let key = String(line.dropFirst(4).prefix { $0 != ":" })
                if methods.contains(key) { pathOperations.append(Operation(method: key, path: path, ports: [])) }
            }
        }
        flush()
        return operations
    }

    private static func sourceDocument() -> URL? {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Services/TestResult/openapi.yaml")
    }

    @Test("every operation in openapi.yaml is routed on exactly the ports the document names")
    func everyDocumentedRouteExists() async throws {
        let operations = try Self.documentedOperations()
        let apps: [Int: any ApplicationProtocol] = [
            8003: try TestResultFixture.labApp(dependencies: .inMemory()),
            8013: try TestResultFixture.internalApp(dependencies: .inMemory()),
        ]
        #expect(operations.count == 10, "the parser found \(operations)")

        for operation in operations {
            for (port, app) in apps {
                let routed = try await Self.isRouted(operation, on: app)
                #expect(routed == operation.ports.contains(port), "\(operation): routed on \(port) is \(routed)")
            }
        }
    }

    private static func isRouted(_ operation: Operation, on app: some ApplicationProtocol) async throws -> Bool {
        let method = HTTPRequest.Method(rawValue: operation.method.uppercased())!
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
