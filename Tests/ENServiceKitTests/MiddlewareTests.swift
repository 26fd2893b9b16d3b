// The standard middleware stack: error shapes, request ids, body limits, request log privacy, metrics.

import AsyncHTTPClient
import ENPersistence
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

    static func app(
        maxBodyBytes: Int = 64,
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
        environment: ServiceEnvironment = .testing()
    )
        -> some ApplicationProtocol
    {
        let router = Router(context: ServiceRequestContext.self)
        router.addStandardMiddleware(maxBodyBytes: maxBodyBytes, metricsFactory: environment.metricsFactory)
        router.get("/client-error") { _, _ -> String in throw APIError(.conflict, "already there") }
        router.get("/framework-error") { _, _ -> String in throw HTTPError(.forbidden, message: "nope") }
        router.get("/bug") { _, _ -> String in throw Unexpected() }
        router.get("/busy") { _, _ -> String in throw DatabaseBusy(waited: .seconds(2)) }
        router.get("/deadline") { _, _ -> String in
            // The request's database deadline, as the standard middleware sets it; and what its passing answers.
            guard let deadline = DatabasePool.deadline, deadline > .now + .seconds(10) else { return "no deadline" }
            throw DatabaseDeadlineExceeded()
        }
        router.get("/items/{id}") { _, _ in "ok" }
        router.post("/ignore") { _, _ in "ignored" }
        router.post("/echo") { request, context -> String in
            let body = try await request.body.collect(upTo: .max)
            return "\(body.readableBytes)"
        }
        MetricsController(registry: environment.metricsRegistry, readiness: nil).addRoutes(to: router)
        return Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            logger: logger
        )
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

    @Test("a request that found no free database connection gets 503 with Retry-After, logged as a warning, counted")
    func databaseBusy() async throws {
        let logs = InMemoryLogHandler()
        let logger = Logger(label: "test", factory: { _ in logs })

        try await Self.app(logger: logger).test(.router) { client in
            let response = try await client.execute(uri: "/busy", method: .get)
            let metrics = try await client.execute(uri: "/metrics", method: .get)

            #expect(response.status == .serviceUnavailable)
            #expect(response.headers[.retryAfter] == "1")
            #expect(response.body.text == #"{"error":"the service is busy; try again"}"#)
            #expect(metrics.body.text.contains("en_db_pool_lease_timeouts_total 1"))
        }
        #expect(logs.entries.contains { $0.level == .warning && $0.message == "Request refused: database busy" })
        #expect(!logs.entries.contains { $0.level == .error })
    }

    @Test("every request's database work has a deadline; passing it is a 503 with Retry-After: 5, not a 500")
    func databaseDeadline() async throws {
        let logs = InMemoryLogHandler()
        let logger = Logger(label: "test", factory: { _ in logs })

        try await Self.app(logger: logger).test(.router) { client in
            let response = try await client.execute(uri: "/deadline", method: .get)

            #expect(response.status == .serviceUnavailable)
            #expect(response.headers[.retryAfter] == "5")
            #expect(response.body.text == #"{"error":"the service is unavailable; try again"}"#)
        }
        #expect(logs.entries.contains { $0.level == .warning && $0.message == "Request refused: database unavailable" })
        #expect(!logs.entries.contains { $0.level == .error })
    }

    @Test("a gateway request id is kept and echoed; a hostile one is replaced")
    func requestID() async throws {
        try await Self.app().test(.router) { client in
            let kept = try await client.execute(
                uri: "/items/1",
                method: .get,
                headers: [RequestIDMiddleware<ServiceRequestContext>.headerName: "gw-123.abc"]
            )
            let replaced = try await client.execute(
                uri: "/items/1",
                method: .get,
                headers: [RequestIDMiddleware<ServiceRequestContext>.headerName: "a b\"<script>"]
            )
            let generated = try await client.execute(uri: "/items/1", method: .get)

            #expect(kept.headers[RequestIDMiddleware<ServiceRequestContext>.headerName] == "gw-123.abc")
            #expect(replaced.headers[RequestIDMiddleware<ServiceRequestContext>.headerName] != "a b\"<script>")
            #expect(generated.headers[RequestIDMiddleware<ServiceRequestContext>.headerName]?.isEmpty == false)
        }
    }

    @Test(
        "the request log names the route template and status, never the raw path, headers, body or client address (real socket)"
    )
    func requestLogPrivacy() async throws {
        let logs = InMemoryLogHandler()
        let logger = Logger(label: "test", factory: { _ in logs })

        try await LiveServer.run(Self.app(logger: logger)) { port in
            var get = HTTPClientRequest(url: "http://127.0.0.1:\(port)/items/secret-token-123?tan=query-secret")
            get.headers.add(name: "Authorization", value: "Bearer header-secret")
            get.headers.add(name: "X-Forwarded-For", value: "203.0.113.9")
            _ = try await HTTP.send(get)
            _ = try await HTTP.post("http://127.0.0.1:\(port)/echo", json: "body-secret-4711")
        }
        let lines = logs.entries.filter { $0.message == "Request" }
        #expect(lines.count == 2)
        #expect(lines.first?.metadata["http.route"]?.description == "/items/{id}")
        #expect(lines.first?.metadata["http.response.status_code"]?.description == "200")
        // The server's own "listening on 127.0.0.1:<port>" line is its bind address, not a client's.
        let everything = logs.entries.filter { !$0.message.description.hasPrefix("Server started") }
            .map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in ["secret-token-123", "query-secret", "header-secret", "203.0.113.9", "body-secret", "127.0.0.1:"]
        {
            #expect(!everything.contains(secret), "log contains \(secret)")
        }
    }

    @Test("a declared Content-Length over the limit gets 413 even when the handler would never read the body")
    func declaredLengthOverLimit() async throws {
        try await Self.app(maxBodyBytes: 64).test(.router) { client in
            let declaredSmall = try await client.execute(
                uri: "/ignore",
                method: .post,
                headers: [.contentLength: "64"],
                body: ByteBuffer(repeating: 1, count: 64)
            )
            let declaredLarge = try await client.execute(
                uri: "/ignore",
                method: .post,
                headers: [.contentLength: "65"],
                body: ByteBuffer(repeating: 1, count: 65)
            )
            let malformed = try await client.execute(uri: "/ignore", method: .post, headers: [.contentLength: "-3"])

            #expect(declaredSmall.status == .ok)
            #expect(declaredLarge.status == .contentTooLarge)
            #expect(declaredLarge.body.text == #"{"error":"request body is larger than 64 bytes"}"#)
            #expect(malformed.status == .badRequest)
        }
    }

    @Test("a body without a declared length is cut off while it streams")
    func streamedOverLimit() async throws {
        try await Self.app(maxBodyBytes: 64).test(.router) { client in
            let small = try await client.execute(uri: "/echo", method: .post, body: ByteBuffer(repeating: 1, count: 64))
            let large = try await client.execute(uri: "/echo", method: .post, body: ByteBuffer(repeating: 1, count: 65))

            #expect(small.status == .ok)
            #expect(small.body.text == "64")
            #expect(large.status == .contentTooLarge)
        }
    }

    @Test("a chunked body is cut off once it passes the limit (real socket)")
    func chunkedOverLimit() async throws {
        let app = Self.app(maxBodyBytes: 1024)

        try await LiveServer.run(app) { port in
            func chunked(_ chunks: Int) -> HTTPClientRequest {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/echo")
                request.method = .POST
                request.body = .stream(
                    AsyncStream { continuation in
                        for _ in 0..<chunks { continuation.yield(ByteBuffer(repeating: 7, count: 512)) }
                        continuation.finish()
                    },
                    length: .unknown
                )
                return request
            }

            let accepted = try await HTTP.send(chunked(2))
            let refused = try await HTTP.send(chunked(4))

            #expect(accepted.status == 200)
            #expect(accepted.body == "1024")
            #expect(refused.status == 413)
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
            #expect(
                scrape.body.text.contains(
                    #"http_server_requests_total{method="GET",route="/items/{id}",status="200"} 2"#
                )
            )
            #expect(
                scrape.body.text.contains(
                    #"http_server_requests_total{method="GET",route="/client-error",status="409"} 1"#
                )
            )
        }
    }

    @Test("a request counts in http_server_active_requests while it runs, and no longer once answered")
    func activeRequests() async throws {
        let environment = ServiceEnvironment.testing()
        let (entered, enteredSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let router = Router(context: ServiceRequestContext.self)
        router.addStandardMiddleware(maxBodyBytes: 64, metricsFactory: environment.metricsFactory)
        router.post("/wait") { _, _ -> String in
            enteredSignal.yield()
            for await _ in release { break }
            return "released"
        }
        MetricsController(registry: environment.metricsRegistry, readiness: nil).addRoutes(to: router)

        try await Application(router: router).test(.router) { client in
            async let waiting = client.execute(uri: "/wait", method: .post)
            for await _ in entered { break }
            let during = try await client.execute(uri: "/metrics", method: .get).body.text
            releaseSignal.yield()
            let answered = try await waiting
            let after = try await client.execute(uri: "/metrics", method: .get).body.text

            #expect(during.contains(#"http_server_active_requests{method="POST"} 1.0"#))
            #expect(answered.body.text == "released")
            #expect(after.contains(#"http_server_active_requests{method="POST"} 0.0"#))
        }
    }
}
