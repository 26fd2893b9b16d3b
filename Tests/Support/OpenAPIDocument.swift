// The operations an OpenAPI document lists, for tests that hold a service's routers against its documents.

package import ENServiceKit
package import Foundation
package import Hummingbird
package import Testing

/// One documented operation: `POST /path`, and the ports of its path's own `servers` (empty when it names none).
package struct OpenAPIOperation: Hashable, Sendable, CustomStringConvertible {
    /// Upper case: `GET`, `POST`.
    package let method: String
    package let path: String
    package var ports: Set<Int>

    package var description: String {
        "\(self.method) \(self.path)" + (self.ports.isEmpty ? "" : " on \(self.ports.sorted())")
    }
}

package enum OpenAPIDocument {
    /// The operations under `paths:` of the YAML document at `url`. Reads the layout our documents use: top-level
    /// keys at column 0, path keys indented two spaces, method keys four, per-path `servers` entries six.
    package static func operations(in url: URL) throws -> [OpenAPIOperation] {
        let methods: Set<String> = ["get", "post", "put", "delete", "patch", "head", "options"]
        var operations: [OpenAPIOperation] = []
        var inPaths = false
        var path: String?
        var pathOperations: [OpenAPIOperation] = []
        var pathPorts: Set<Int> = []
        func flush() {
            operations += pathOperations.map { OpenAPIOperation(method: $0.method, path: $0.path, ports: pathPorts) }
            pathOperations = []
            pathPorts = []
        }
        for line in try String(contentsOf: url, encoding: .utf8).split(
            separator: "\n",
            omittingEmptySubsequences: false
        ) {
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
                if methods.contains(key) {
                    pathOperations.append(OpenAPIOperation(method: key.uppercased(), path: path, ports: []))
                }
            }
        }
        flush()
        return operations
    }
}

extension Router {
    /// Every route the router mounts as `METHOD /path`, captures written `{name}` as the documents write them.
    package var operations: Set<String> {
        Set(self.routes.map { "\($0.method.rawValue) \($0.path)" })
    }

    /// Records an issue unless the router mounts exactly the `documented` operations (`METHOD /path`), naming the
    /// routes the document lacks and the operations nothing mounts; and, given an internal port's route `table`,
    /// unless the routes it mounts besides the open ones (`GET /health/…`, `GET /metrics`, `GET /openapi…`) are
    /// exactly the table's, so every internal route has its callers declared and every declared one is mounted.
    package func expectMounts(
        exactly documented: Set<String>,
        internalRoutes table: [InternalRoute]? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let mounted = self.operations
        #expect(
            mounted == documented,
            "undocumented \(mounted.subtracting(documented).sorted()), unrouted \(documented.subtracting(mounted).sorted())",
            sourceLocation: sourceLocation
        )
        if let table {
            let declared = Set(table.map(\.description))
            let api = mounted.filter { !Self.isOpen($0) }
            #expect(
                api == declared,
                "mounted without declared callers \(api.subtracting(declared).sorted()), declared but not mounted \(declared.subtracting(api).sorted())",
                sourceLocation: sourceLocation
            )
        }
    }

    /// Health, metrics and the OpenAPI documents: open on every port, for probes and scrapers.
    package static func isOpen(_ operation: String) -> Bool {
        ["GET /health/", "GET /metrics", "GET /openapi"].contains { operation.hasPrefix($0) }
    }
}
