// The standard middleware stack: error shapes, request ids, body limits, request log privacy, metrics.

import AsyncHTTPClient
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import NIOCore
import NIOHTTP1
import Testing

@Suite("Standard middleware")
struct MiddlewareTests {
    struct Unexpected: Error {}

    static func app(maxBodyBytes: Int = 64, logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), environment: ServiceEnvironment = .testing())
        -> some ApplicationProtocol
    {
        let router = Router(context: ServiceRequestContext.self)
        router.addStandardMiddleware(maxBodyBytes: maxBodyBytes, metricsFactory: environment.metricsFactory)
        router.get("/client-error") { _, _ -> String in throw APIError(.conflict, "already there") }
        router.get("/framework-error") { _, _ -> String in throw HTTPError(.forbidden, message: "nope") }
        router.get("/bug") { _, _ -> String in throw Unexpected() }
        router.get("/items/{id}") { _, _ in "ok" }
        router.post("/echo") { request, context -> String in
            let body = try await request.body.collect(upTo: .max)
            return "\(body.readableBytes)"
        }
        MetricsController(registry: environment.metricsRegistry).addRoutes(to: router)
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
    }

    @Test("client errors are JSON {\"error\": …} with their status; Hummingbird's errors get the same shape")
    func clientErrors() async throws {
        try await Self.app().test(.router) { client in
            let conflict = try await client.execute(uri: "/client-error", method: .get)
            let forbidden = try await client.execute(uri: "/framework-error", method: .get)
            let missing = try await client.execute(uri: "/nowhere", method: .get)

            #expect(conflict.status == .conflict)
            #expect(conflict.body.text == #"{"error":"already there"}"#)
            #expect(forbidden.status == .forbidden)
            #expect(forbidden.body.text == #"{"error":"nope"}"#)
            #expect(missing.status == .notFound)
            #expect(missing.body.text.hasPrefix(#"{"error":"#))
        }
    }

    @Test("an unexpected error is a bare 500, logged with its type only")
    func unexpectedError() async throws {
        let logs = InMemoryLogHandler()
        let logger = Logger(label: "test", factory: { _ in logs })

        try await Self.app(logger: logger).test(.router) { client in
            let response = try await client.execute(uri: "/bug", method: .get)

            #expect(response.status == .internalServerError)
            #expect(response.body.readableBytes == 0)
        }
        let failure = try #require(logs.entries.first { $0.message == "Request failed" })
        #expect(failure.level == .error)
        #expect(failure.metadata["error.type"]?.description.hasSuffix("Unexpected") == true)
    }

    @Test("a gateway request id is kept and echoed; a hostile one is replaced")
    func requestID() async throws {
        try await Self.app().test(.router) { client in
            let kept = try await client.execute(uri: "/items/1", method: .get, headers: [RequestIDMiddleware<ServiceRequestContext>.headerName: "gw-123.abc"])
            let replaced = try await client.execute(uri: "/items/1", method: .get, headers: [RequestIDMiddleware<ServiceRequestContext>.headerName: "a b\"<script>"])
            let generated = try await client.execute(uri: "/items/1", method: .get)

            #expect(kept.headers[RequestIDMiddleware<ServiceRequestContext>.headerName] == "gw-123.abc")
            #expect(replaced.headers[RequestIDMiddleware<ServiceRequestContext>.headerName] != "a b\"<script>")
            #expect(generated.headers[RequestIDMiddleware<ServiceRequestContext>.headerName]?.isEmpty == false)
        }
    }

    @Test("the request log names the route template and status, never the raw path, headers or body")
    func requestLogPrivacy() async throws {
        let logs = InMemoryLogHandler()
        let logger = Logger(label: "test", factory: { _ in logs })

        try await Self.app(logger: logger).test(.router) { client in
            _ = try await client.execute(uri: "/items/secret-token-123", method: .get, headers: [.authorization: "Bearer abc"])
            _ = try await client.execute(uri: "/echo", method: .post, body: ByteBuffer(string: "tan-4711"))
        }
        let lines = logs.entries.filter { $0.message == "Request" }
        #expect(lines.count == 2)
        #expect(lines.first?.metadata["http.route"]?.description == "/items/{id}")
        #expect(lines.first?.metadata["http.response.status_code"]?.description == "200")
        let everything = logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in ["secret-token-123", "Bearer", "tan-4711", "127.0.0.1"] {
            #expect(!everything.contains(secret), "log contains \(secret)")
        }
    }

    @Test("a declared Content-Length over the limit gets 413 before the handler runs")
    func declaredLengthOverLimit() async throws {
        try await Self.app(maxBodyBytes: 64).test(.router) { client in
            let small = try await client.execute(uri: "/echo", method: .post, body: ByteBuffer(repeating: 1, count: 64))
            let large = try await client.execute(uri: "/echo", method: .post, body: ByteBuffer(repeating: 1, count: 65))

            #expect(small.status == .ok)
            #expect(small.body.text == "64")
            #expect(large.status == .contentTooLarge)
            #expect(large.body.text == #"{"error":"request body is larger than 64 bytes"}"#)
        }
    }

    @Test("a chunked body is cut off once it passes the limit (real socket)")
    func chunkedOverLimit() async throws {
        let app = Self.app(maxBodyBytes: 1024)

        try await LiveServer.run(app) { port in
            let chunk = ByteBuffer(repeating: 7, count: 512)
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/echo")
            request.method = .POST
            request.body = .stream(AsyncStream { continuation in
                for _ in 0..<4 { continuation.yield(chunk) }
                continuation.finish()
            }, length: .unknown)
            var fits = HTTPClientRequest(url: "http://127.0.0.1:\(port)/echo")
            fits.method = .POST
            fits.body = .stream(AsyncStream { continuation in
                for _ in 0..<2 { continuation.yield(chunk) }
                continuation.finish()
            }, length: .unknown)

            let accepted = try await HTTPClient.shared.execute(fits, timeout: .seconds(30))
            let acceptedBody = try await accepted.body.collect(upTo: 1024)
            let refused = try await HTTPClient.shared.execute(request, timeout: .seconds(30))

            #expect(accepted.status == .ok)
            #expect(acceptedBody.text == "1024")
            #expect(refused.status == .payloadTooLarge)
        }
    }

    @Test("requests are counted in Prometheus by method, route and status")
    func metrics() async throws {
        let environment = ServiceEnvironment.testing()

        try await Self.app(environment: environment).test(.router) { client in
            _ = try await client.execute(uri: "/items/1", method: .get)
            _ = try await client.execute(uri: "/items/2", method: .get)
            _ = try await client.execute(uri: "/client-error", method: .get)
            let scrape = try await client.execute(uri: "/metrics", method: .get)

            #expect(scrape.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            #expect(scrape.body.text.contains(#"http_server_requests_total{method="GET",route="/items/{id}",status="200"} 2"#))
            #expect(scrape.body.text.contains(#"http_server_requests_total{method="GET",route="/client-error",status="409"} 1"#))
        }
    }
}
