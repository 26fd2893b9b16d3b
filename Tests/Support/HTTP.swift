// Plain HTTP requests to a running process.

import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// One-off requests with AsyncHTTPClient's shared client.
package enum HTTP {
    package static func get(_ url: String) async throws -> (status: UInt, body: String) {
        try await self.send(HTTPClientRequest(url: url))
    }

    package static func post(_ url: String, json: String) async throws -> (status: UInt, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
        return try await self.send(request)
    }

    private static func send(_ request: HTTPClientRequest) async throws -> (status: UInt, body: String) {
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (response.status.code, String(buffer: body))
    }
}
