// The gateway over HTTPS with mutual TLS (cwa-server §5.1): the client certificate in the handshake and, as the
// gateway's TLS front forwards them, its thumbprint and subject in `X-SSL-Client-SHA256` / `X-SSL-Client-DN`.

import AsyncHTTPClient
import ENFederation
import ENModels
import ENServiceKit
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ServiceLifecycle
import SwiftProtobuf

/// The live gateway client, run as a service so it shuts down after the jobs.
final class HTTPFederationGateway: FederationGateway, Service {
    private let http: HTTPClient
    private let baseURL: String
    private let identity: GatewayClientIdentity
    private let policy: UpstreamPolicy
    private let logger: Logger
    /// The largest download answer read (5,000 keys of at most ~200 bytes, with room).
    private static let maxBodyBytes = 4 * 1024 * 1024

    init(baseURL: String, identity: GatewayClientIdentity, policy: UpstreamPolicy, logger: Logger) {
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = identity.tls
        configuration.timeout = .init(connect: TimeAmount(policy.connectTimeout), read: TimeAmount(policy.readTimeout))
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.baseURL = baseURL.trimmingSuffix("/")
        self.identity = identity
        self.policy = policy
        self.logger = logger
    }

    func run() async throws {
        try? await gracefulShutdown()
        try await self.http.shutdown()
    }

    func upload(_ batch: DiagnosisKeyBatch, tag: String, signature: String) async throws -> UploadAnswer {
        let body = try batch.serializedBytes() as [UInt8]
        let response = try await self.send(
            .POST,
            "/diagnosiskeys/upload",
            headers: [
                ("Content-Type", FederationProtocol.protobufMediaType),
                ("Accept", FederationProtocol.jsonMediaType),
                (FederationProtocol.batchTagHeader, tag),
                (FederationProtocol.batchSignatureHeader, signature),
            ],
            body: body,
            retryAfterSending: false
        )
        switch response.status {
        case 200, 201: return .created
        case 207:
            do {
                return .multiStatus(
                    try JSONDecoder().decode(BatchUploadResponse.self, from: Data(response.body.readableBytesView))
                )
            } catch {
                // An unreadable 207 tells nothing about which keys were taken: like a refusal, nothing is marked.
                return .refused(status: 207, message: "unreadable multi-status body")
            }
        case 409: return .duplicateTag
        default: return .refused(status: response.status, message: Self.message(response.body))
        }
    }

    func download(day: String, tag: String?) async throws -> DownloadAnswer {
        var headers = [("Accept", FederationProtocol.protobufMediaType)]
        if let tag { headers.append((FederationProtocol.batchTagHeader, tag)) }
        let response = try await self.send(.GET, "/diagnosiskeys/download/\(day)", headers: headers)
        switch response.status {
        case 200:
            guard let tag = FederationProtocol.batchTag(response.headers.first(name: FederationProtocol.batchTagHeader))
            else { throw GatewayProtocolError("a download answer without a batchTag header") }
            let batch: DiagnosisKeyBatch
            do {
                batch = try DiagnosisKeyBatch(serializedBytes: Array(buffer: response.body))
            } catch {
                throw GatewayProtocolError("a download answer that is not a DiagnosisKeyBatch")
            }
            return .batch(
                DownloadedBatch(
                    tag: tag,
                    nextTag: FederationProtocol.batchTag(
                        response.headers.first(name: FederationProtocol.nextBatchTagHeader)
                    ),
                    batch: batch
                )
            )
        case 404: return .notFound
        case 410: return .gone
        default:
            throw GatewayProtocolError("download answered \(response.status): \(Self.message(response.body))")
        }
    }

    func audit(day: String, tag: String) async throws -> [AuditEntry] {
        let escaped = tag.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-", "_", "."])) ?? tag
        let response = try await self.send(
            .GET,
            "/diagnosiskeys/audit/download/\(day)/\(escaped)",
            headers: [("Accept", FederationProtocol.jsonMediaType)]
        )
        guard response.status == 200 else {
            throw GatewayProtocolError("audit answered \(response.status): \(Self.message(response.body))")
        }
        do {
            return try JSONDecoder().decode([AuditEntry].self, from: Data(response.body.readableBytesView))
        } catch {
            throw GatewayProtocolError("an audit answer that is not a list of audit entries")
        }
    }

    func callbacks() async throws -> [CallbackRegistration] {
        let response = try await self.send(
            .GET,
            "/diagnosiskeys/callback",
            headers: [("Accept", FederationProtocol.jsonMediaType)]
        )
        guard response.status == 200 else {
            throw GatewayProtocolError("the callback list answered \(response.status)")
        }
        do {
            return try JSONDecoder().decode([CallbackRegistration].self, from: Data(response.body.readableBytesView))
        } catch {
            throw GatewayProtocolError("a callback list that is not a list of registrations")
        }
    }

    func registerCallback(id: String, url: String) async throws {
        var query = URLComponents()
        query.queryItems = [URLQueryItem(name: "url", value: url)]
        let response = try await self.send(
            .PUT,
            "/diagnosiskeys/callback/\(id)?\(query.percentEncodedQuery ?? "")",
            headers: [("Accept", FederationProtocol.jsonMediaType)]
        )
        guard (200...299).contains(response.status) else {
            throw GatewayProtocolError(
                "the callback registration answered \(response.status): \(Self.message(response.body))"
            )
        }
    }

    // MARK: - Transport

    private struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: ByteBuffer
    }

    /// One call with the policy's timeouts; connection failures, timeouts and 5xx answers are repeated
    /// `policy.retries` times after a jittered, doubling back-off (an upload only when it was never sent). A 403 is
    /// fatal: the gateway does not know this backend's certificate.
    private func send(
        _ method: HTTPMethod,
        _ path: String,
        headers: [(String, String)],
        body: [UInt8]? = nil,
        retryAfterSending: Bool = true
    ) async throws -> Answer {
        var generator = SystemRandomNumberGenerator()
        var backoff = self.policy.backoff
        var attempt = 0
        while true {
            attempt += 1
            var request = HTTPClientRequest(url: self.baseURL + path)
            request.method = method
            request.headers.add(name: FederationProtocol.clientThumbprintHeader, value: self.identity.thumbprint)
            request.headers.add(name: FederationProtocol.clientDNHeader, value: self.identity.distinguishedName)
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
            let failure: String
            var sent = true
            do {
                let response = try await self.http.execute(
                    request,
                    timeout: TimeAmount(self.policy.connectTimeout + self.policy.readTimeout)
                )
                let collected = try await response.body.collect(upTo: Self.maxBodyBytes)
                let status = Int(response.status.code)
                if status == 403 {
                    throw GatewayUnavailable(
                        description: "the gateway refused this backend's certificate (403)",
                        forbidden: true
                    )
                }
                guard (500...599).contains(status) else {
                    return Answer(status: status, headers: response.headers, body: collected)
                }
                failure = "status \(status)"
            } catch let error as GatewayUnavailable {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                failure = "transport: \(String(reflecting: type(of: error)))"
                sent = !UpstreamClient.isConnectFailure(error)
            }
            guard attempt <= self.policy.retries, retryAfterSending || !sent, !Task.isCancelled else {
                self.logger.warning(
                    "Federation gateway unavailable",
                    metadata: [
                        "upstream.failure": "\(failure)", "upstream.attempts": "\(attempt)",
                        "path": "\(method) \(path.prefix(40))",
                    ]
                )
                throw GatewayUnavailable(description: failure)
            }
            let wait = backoff * Double.random(in: 0...1, using: &generator)
            backoff = backoff * 2
            try await Task.sleep(for: wait)
        }
    }

    /// The gateway's `{"message": …}`, shortened; its messages name rules, not key data.
    private static func message(_ body: ByteBuffer) -> String {
        struct ErrorBody: Decodable { var message: String? }
        let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(body.readableBytesView))
        return String((decoded?.message ?? String(buffer: body)).prefix(200))
    }
}

/// The gateway answered something the protocol does not allow.
struct GatewayProtocolError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// This backend's client certificate: the TLS settings that present it, its thumbprint and its subject.
struct GatewayClientIdentity: Sendable {
    var tls: TLSConfiguration
    /// SHA-256 of the certificate's DER, 64 lowercase hex characters.
    var thumbprint: String
    /// The subject as `CN=…,O=…,C=…`.
    var distinguishedName: String
    /// The client certificate's chain and the CAs of `EFGS_CA_FILE`, for their expiry.
    var certificates: [NIOSSLCertificate] = []
    var authorities: [NIOSSLCertificate] = []
}
