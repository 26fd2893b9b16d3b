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
    /// `(method, path)` pairs under `paths:` of the document (two-space path keys, four-space method keys).
    static func documentedOperations() throws -> [(method: String, path: String)] {
        let url = try #require(Bundle.module.url(forResource: "openapi", withExtension: "yaml") ?? Self.sourceDocument())
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        var operations: [(String, String)] = []
        var inPaths = false
        var currentPath: String?
        let methods: Set<String> = ["get", "post", "put", "delete", "patch", "head", "options"]
        for line in lines {
            if !line.hasPrefix(" ") && !line.isEmpty {
                inPaths = line.hasPrefix("paths:")
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), !line.hasPrefix("   ") {
                currentPath = String(line.dropFirst(2).prefix { $0 != ":" })
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), let path = currentPath {
                let key = String(line.dropFirst(4).prefix { $0 != ":" })
                if methods.contains(key) { operations.append((key, path)) }
            }
        }
        return operations
    }

    private static func sourceDocument() -> URL? {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Services/TestResult/openapi.yaml")
    }

    @Test("every operation in openapi.yaml is routed on the lab or the internal port")
    func everyDocumentedRouteExists() async throws {
        let operations = try Self.documentedOperations()
        let lab = try TestResultFixture.labApp(dependencies: .inMemory())
        let internalAPI = try TestResultFixture.internalApp(dependencies: .inMemory())
        #expect(operations.count >= 10, "the parser found \(operations.count) operations")

        for operation in operations {
            let method = HTTPRequest.Method(rawValue: operation.method.uppercased())!
            let body = method == .post ? ByteBuffer(string: "{}") : nil
            let onLab = try await lab.test(.router) { client in
                try await client.execute(uri: operation.path, method: method, headers: .json, body: body).status
            }
            let onInternal = try await internalAPI.test(.router) { client in
                try await client.execute(uri: operation.path, method: method, headers: .json, body: body).status
            }
            let routed = [onLab, onInternal].contains { $0 != .notFound && $0 != .methodNotAllowed }
            #expect(routed, "\(operation.method.uppercased()) \(operation.path) is documented but not routed")
        }
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
