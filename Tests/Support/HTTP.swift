// One-off HTTP requests to a running server, optionally over TLS with a client certificate.

package import AsyncHTTPClient
import NIOCore
import NIOHTTP1
package import NIOSSL

/// Requests with a short-lived AsyncHTTPClient (the shared one for plain HTTP).
package enum HTTP {
    /// A response's status code and body text.
    package typealias Reply = (status: UInt, body: String)

    package static func get(_ url: String, tls: TLSConfiguration? = nil) async throws -> Reply {
        try await self.send(HTTPClientRequest(url: url), tls: tls)
    }

    package static func post(
        _ url: String,
        json: String,
        headers: [(String, String)] = [],
        tls: TLSConfiguration? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(string: json))
        return try await self.send(request, tls: tls)
    }

    /// Sends `request`; with `tls`, on a client of its own that is shut down afterwards.
    package static func send(_ request: HTTPClientRequest, tls: TLSConfiguration? = nil) async throws -> Reply {
        guard let tls else { return try await self.execute(request, on: HTTPClient.shared) }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        return try await withCleanup {
            try await self.execute(request, on: client)
        } cleanup: {
            try await client.shutdown()
        }
    }

    private static func execute(_ request: HTTPClientRequest, on client: HTTPClient) async throws -> Reply {
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (response.status.code, String(buffer: body))
    }
}
