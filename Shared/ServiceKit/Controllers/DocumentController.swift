// Serves a fixed document shipped with a service, such as its OpenAPI description.

package import Foundation
package import Hummingbird
import NIOCore

/// A static document read once at start-up.
package struct DocumentController<Context: RequestContext>: Sendable {
    private let path: String
    private let contentType: String
    private let body: ByteBuffer

    package init(path: String, contentType: String, bytes: [UInt8]) {
        self.path = path
        self.contentType = contentType
        self.body = ByteBuffer(bytes: bytes)
    }

    /// The service's OpenAPI resource `name` (`openapi.yaml` unless a port has its own), served at `/openapi.yaml`.
    package static func openAPI(resource name: String = "openapi", in bundle: Bundle) throws -> DocumentController {
        guard let url = bundle.url(forResource: name, withExtension: "yaml") else {
            throw DocumentError.missing("\(name).yaml")
        }
        return DocumentController(
            path: "/openapi.yaml",
            contentType: "application/yaml; charset=utf-8",
            bytes: Array(try Data(contentsOf: url))
        )
    }

    package func addRoutes(to router: Router<Context>) {
        router.get(RouterPath(self.path)) { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: self.contentType],
                body: .init(byteBuffer: self.body)
            )
        }
    }
}

/// A resource that should ship with the binary is missing.
package enum DocumentError: Error, CustomStringConvertible {
    case missing(String)
    package var description: String {
        switch self {
        case .missing(let name): "resource \(name) is missing from the service bundle"
        }
    }
}
