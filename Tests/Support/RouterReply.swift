// Calls through a router in-process (HummingbirdTesting's `.router` setup), one at a time or many at once.

import Foundation
package import HTTPTypes
package import Hummingbird
import HummingbirdTesting
package import NIOCore

/// What a router answered.
package struct RouterReply: Sendable {
    package let status: HTTPResponse.Status
    package let headers: HTTPFields
    package let body: ByteBuffer

    package init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package var text: String { self.body.text }

    /// The body as a JSON object (empty when it is none).
    package func json() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: self.body.data) as? [String: Any] ?? [:]
    }

    package func string(_ key: String) throws -> String? { try self.json()[key] as? String }
}

extension ApplicationProtocol {
    /// One GET through the router.
    package func get(_ uri: String, headers: HTTPFields = [:]) async throws -> RouterReply {
        try await self.test(.router) { client in
            let response = try await client.execute(uri: uri, method: .get, headers: headers, body: nil)
            return RouterReply(status: response.status, headers: response.headers, body: response.body)
        }
    }

    /// One POST through the router.
    package func post(_ uri: String, headers: HTTPFields, body: ByteBuffer?) async throws -> RouterReply {
        try await self.test(.router) { client in
            let response = try await client.execute(uri: uri, method: .post, headers: headers, body: body)
            return RouterReply(status: response.status, headers: response.headers, body: response.body)
        }
    }

    /// The same POST `count` times at once.
    package func post(
        _ uri: String,
        headers: HTTPFields,
        body: ByteBuffer?,
        times count: Int
    ) async throws -> [RouterReply] {
        try await self.test(.router) { client in
            try await withThrowingTaskGroup(of: RouterReply.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        let response = try await client.execute(uri: uri, method: .post, headers: headers, body: body)
                        return RouterReply(status: response.status, headers: response.headers, body: response.body)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
    }
}
