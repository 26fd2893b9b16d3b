// HTTPS to the gateway: the development CA (or the system's), an optional client certificate (labs), an optional
// source address (so tests can tell the client's address from the servers' own), timing and the answer's size.

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// What the gateway answered to one request.
struct Reply: Sendable {
    let status: Int
    let headers: [(name: String, value: String)]
    let body: [UInt8]
    /// From sending the request to the last byte of the body.
    let seconds: Double

    /// The size of the answer on the wire inside TLS: status line, headers and body (HTTP/1.1 framing).
    var wireSize: Int {
        let statusLine = "HTTP/1.1 \(self.status) \(HTTPResponseStatus(statusCode: self.status).reasonPhrase)\r\n".utf8
            .count
        let headerBytes = self.headers.reduce(0) { $0 + $1.name.utf8.count + 2 + $1.value.utf8.count + 2 }
        return statusLine + headerBytes + 2 + self.body.count
    }

    var text: String { String(decoding: self.body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        self.headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    func headers(_ name: String) -> [String] {
        self.headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }
}

/// A failure the user should read: one line, no stack.
struct ClientFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One AsyncHTTPClient configured for the gateway. Shut it down when done.
final class GatewayClient: Sendable {
    private let http: HTTPClient
    let timeout: TimeAmount

    /// - Parameters:
    ///   - caFile: PEM certificates to trust instead of the system's (the development CA).
    ///   - certificateFile / keyFile: a client certificate (labs).
    ///   - sourceAddress: the local address to connect from (`127.0.0.7`), so no server-side record of `127.0.0.1`
    ///     can be mistaken for the client's.
    ///   - connections: the most connections kept open to one host (load tests raise it).
    init(
        caFile: String?,
        certificateFile: String? = nil,
        keyFile: String? = nil,
        sourceAddress: String? = nil,
        connections: Int = 8,
        timeout: Double = 30
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let caFile {
            tls.trustRoots = .certificates(try Self.load("CA file", caFile) { try NIOSSLCertificate.fromPEMFile($0) })
        }
        if let certificateFile, let keyFile {
            let chain = try Self.load("client certificate", certificateFile) { try NIOSSLCertificate.fromPEMFile($0) }
            tls.certificateChain = chain.map { .certificate($0) }
            tls.privateKey = .privateKey(
                try Self.load("client key", keyFile) { try NIOSSLPrivateKey(file: $0, format: .pem) }
            )
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        configuration.localAddress = sourceAddress
        configuration.httpVersion = .http1Only
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.timeout = TimeAmount(Duration.seconds(timeout))
    }

    private static func load<T>(_ what: String, _ path: String, _ read: (String) throws -> T) throws -> T {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ClientFailure("cannot read the \(what) \(path)")
        }
        do { return try read(path) } catch { throw ClientFailure("the \(what) \(path) is not valid PEM") }
    }

    /// Sends one request and collects the whole answer (up to 64 MB).
    func send(
        _ method: HTTPMethod,
        _ url: String,
        headers: [(String, String)] = [],
        body: [UInt8]? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let started = ContinuousClock.now
        let response: HTTPClientResponse
        do {
            response = try await self.http.execute(request, timeout: self.timeout)
        } catch {
            throw ClientFailure("\(method) \(url): \(Self.describe(error))")
        }
        let bytes = try await response.body.collect(upTo: 64 << 20)
        let elapsed = ContinuousClock.now - started
        return Reply(
            status: Int(response.status.code),
            headers: response.headers.map { ($0.name, $0.value) },
            body: Array(buffer: bytes),
            seconds: elapsed / .seconds(1)
        )
    }

    func postJSON(_ url: String, _ json: String, headers: [(String, String)] = []) async throws -> Reply {
        try await self.send(
            .POST,
            url,
            headers: [("Content-Type", "application/json")] + headers,
            body: Array(json.utf8)
        )
    }

    func get(_ url: String) async throws -> Reply {
        try await self.send(.GET, url)
    }

    func shutdown() async {
        try? await self.http.shutdown()
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        if let error = error as? NIOSSLError { return "TLS: \(error)" }
        return String(describing: error)
    }
}

/// Runs `body` with a client and shuts the client down afterwards, also when `body` throws.
func withGateway<Result>(_ client: GatewayClient, _ body: (GatewayClient) async throws -> Result) async throws -> Result
{
    do {
        let result = try await body(client)
        await client.shutdown()
        return result
    } catch {
        await client.shutdown()
        throw error
    }
}

/// A JSON object of strings, escaped properly whatever the values hold.
func jsonObject(_ fields: [String: String]) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data("{}".utf8)
    return String(decoding: data, as: UTF8.self)
}

/// JSON of a reply, with a clear failure when the body is not the expected object.
func decodeJSON<T: Decodable>(_ type: T.Type, from reply: Reply, what: String) throws -> T {
    do {
        return try JSONDecoder().decode(T.self, from: Data(reply.body))
    } catch {
        throw ClientFailure("\(what): HTTP \(reply.status) with an unexpected body")
    }
}
