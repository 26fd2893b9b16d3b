// The object store on an S3-compatible bucket: SigV4-signed PUT, HEAD, DELETE and ListObjectsV2 (cwa-server §3.8).

import AsyncHTTPClient
import Crypto
import ENCrypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Publishes the CDN tree to an S3-compatible bucket, one request per operation; the publisher adds parallelism,
/// retries and the decisions. Keys are used as they are: on S3 a directory index is stored under its folder's name.
final class S3ObjectStore: ObjectStore {
    /// Every PUT carries it: CDN and apps keep an object for five minutes (cwa-server §3.8).
    static let cacheControl = "public,max-age=300"
    /// The user metadata `cwa-hash` as S3 takes and returns it.
    static let checksumHeader = "x-amz-meta-cwa-hash"
    /// S3's own maximum of keys per ListObjectsV2 page.
    static let maxPageSize = 1000

    private let configuration: S3Configuration
    private let signer: SigV4Signer
    private let httpClient: HTTPClient
    private let logger: Logger
    /// `<endpoint>/<bucket>`, the bucket encoded.
    private let bucketURL: String
    private let pageSize: Int
    private let now: @Sendable () -> Date

    /// The largest error body read (only for its `<Code>`) and the largest listing page read.
    private static let maxErrorBodyBytes = 64 * 1024
    private static let maxListBodyBytes = 16 * 1024 * 1024

    /// `pageSize` (keys per listing request) is for tests of the continuation; `now` dates the signatures.
    init(
        configuration: S3Configuration,
        httpClient: HTTPClient,
        logger: Logger,
        pageSize: Int = S3ObjectStore.maxPageSize,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.signer = SigV4Signer(
            accessKeyID: configuration.accessKeyID,
            secretAccessKey: configuration.secretAccessKey,
            region: configuration.region
        )
        self.httpClient = httpClient
        self.logger = logger
        var endpoint = configuration.endpoint
        while endpoint.hasSuffix("/") {
            endpoint.removeLast()
        }
        self.bucketURL = endpoint + "/" + SigV4Signer.uriEncode(configuration.bucket, keepSlash: false)
        self.pageSize = min(max(pageSize, 1), Self.maxPageSize)
        self.now = now
    }

    var description: String { "s3 \(self.bucketURL)" }

    // MARK: - ObjectStore

    /// Every key under `prefix`, by ListObjectsV2 pages followed through their continuation tokens.
    func list(prefix: String) async throws -> Set<String> {
        var keys = Set<String>()
        var continuation: String?
        while true {
            var query = [("list-type", "2"), ("max-keys", String(self.pageSize))]
            if !prefix.isEmpty {
                query.append(("prefix", prefix))
            }
            if let continuation {
                query.append(("continuation-token", continuation))
            }
            let answer = try await self.send(
                .GET,
                key: nil,
                query: query,
                operation: "list",
                maxBodyBytes: Self.maxListBodyBytes
            )
            guard (200..<300).contains(answer.status) else {
                throw self.failure(answer, operation: "list", subject: prefix)
            }
            let xml = String(buffer: answer.body)
            keys.formUnion(S3XML.texts(of: "Key", in: xml))
            guard S3XML.text(of: "IsTruncated", in: xml) == "true" else { break }
            guard let next = S3XML.text(of: "NextContinuationToken", in: xml), !next.isEmpty, next != continuation
            else {
                throw S3Error.invalidResponse(
                    operation: "list",
                    key: prefix,
                    reason: "truncated listing without a new continuation token"
                )
            }
            continuation = next
        }
        return keys
    }

    /// HEAD the object and read its `cwa-hash` metadata; `nil` if the object is absent or has none.
    func checksum(of key: String) async throws -> String? {
        let answer = try await self.send(.HEAD, key: key, operation: "head")
        switch answer.status {
        case 200..<300:
            guard let checksum = answer.headers.first(name: Self.checksumHeader), !checksum.isEmpty else { return nil }
            return checksum
        case 404:
            return nil
        default:
            throw self.failure(answer, operation: "head", subject: key)
        }
    }

    /// GET the object's body (at most 512 MiB: an archive of a full day is far smaller); `nil` if it is absent.
    func get(_ key: String) async throws -> [UInt8]? {
        let answer = try await self.send(.GET, key: key, operation: "get", maxBodyBytes: 512 * 1_048_576)
        switch answer.status {
        case 200..<300: return Array(answer.body.readableBytesView)
        case 404: return nil
        default: throw self.failure(answer, operation: "get", subject: key)
        }
    }

    /// PUT the whole body with its content type, `Cache-Control`, `cwa-hash` and, if configured, a public-read ACL.
    /// S3 stores an object whole or not at all, and checks the body against the signed SHA-256.
    func put(_ object: CDNObject) async throws {
        var headers = [
            ("Content-Type", object.contentType.rawValue),
            // Signed documents (the kill switch among them) must reach the apps at once: never cached (nhs §9).
            ("Cache-Control", object.signature == nil ? Self.cacheControl : "no-cache"),
            (Self.checksumHeader, object.checksum),
        ]
        if self.configuration.publicReadACL {
            headers.append(("x-amz-acl", "public-read"))
        }
        if let signature = object.signature {
            // Served by S3 (and a CDN in front of it) as X-Amz-Meta-Signature and X-Amz-Meta-Signature-Date.
            headers.append(("x-amz-meta-signature", signature.value))
            headers.append(("x-amz-meta-signature-date", signature.date))
        }
        let answer = try await self.send(.PUT, key: object.key, headers: headers, body: object.body, operation: "put")
        guard (200..<300).contains(answer.status) else {
            throw self.failure(answer, operation: "put", subject: object.key)
        }
    }

    /// DELETE the object; S3 answers 204 whether or not it existed, and a 404 for the object counts as done too.
    func delete(_ key: String) async throws {
        let answer = try await self.send(.DELETE, key: key, operation: "delete")
        if (200..<300).contains(answer.status) {
            return
        }
        if answer.status == 404, Self.errorCode(answer) != "NoSuchBucket" {
            return
        }
        throw self.failure(answer, operation: "delete", subject: key)
    }

    // MARK: - Bucket

    /// HEAD the bucket: throws `S3Error.bucketMissing` if it does not exist (the reference then fails the run), and
    /// `S3Error.unexpectedStatus` if it cannot be reached with these credentials.
    func checkBucket() async throws {
        let answer = try await self.send(.HEAD, key: nil, operation: "head-bucket")
        switch answer.status {
        case 200..<300:
            return
        case 404:
            throw S3Error.bucketMissing(self.configuration.bucket)
        default:
            throw self.failure(answer, operation: "head-bucket", subject: "")
        }
    }

    // MARK: - Requests

    /// An answer with its body read.
    private struct Answer {
        var status: UInt
        var headers: HTTPHeaders
        var body: ByteBuffer
    }

    /// Signs and sends one request to the bucket (`key` nil) or an object, and reads the answer's body: up to
    /// `maxBodyBytes` of a success, and what fits in 64 KiB of an error (for its code).
    private func send(
        _ method: HTTPMethod,
        key: String?,
        query: [(String, String)] = [],
        headers: [(String, String)] = [],
        body: [UInt8]? = nil,
        operation: String,
        maxBodyBytes: Int = S3ObjectStore.maxErrorBodyBytes
    ) async throws -> Answer {
        var address = self.bucketURL
        if let key {
            address += "/" + SigV4Signer.uriEncode(key, keepSlash: true)
        }
        if !query.isEmpty {
            let pairs = query.map {
                "\(SigV4Signer.uriEncode($0.0, keepSlash: false))=\(SigV4Signer.uriEncode($0.1, keepSlash: false))"
            }
            address += "?" + pairs.joined(separator: "&")
        }
        guard let url = URL(string: address) else { throw S3Error.invalidURL(address) }
        let payloadSHA256 = body.map { Hex.encode(SHA256.hash(data: $0)) } ?? SigV4Signer.emptyPayloadSHA256

        var request = HTTPClientRequest(url: address)
        request.method = method
        // The Host the signature covers; AsyncHTTPClient keeps a Host header it is given.
        request.headers.add(name: "Host", value: SigV4Signer.host(of: url))
        for (name, value) in headers {
            request.headers.add(name: name, value: value)
        }
        let signed = self.signer.sign(
            method: method.rawValue,
            url: url,
            headers: headers,
            payloadSHA256: payloadSHA256,
            date: self.now()
        )
        for (name, value) in signed {
            request.headers.add(name: name, value: value)
        }
        if let body {
            // A body of known length goes out with Content-Length, which AsyncHTTPClient sets (so it is not signed).
            request.body = .bytes(ByteBuffer(bytes: body))
        }

        let response = try await self.httpClient.execute(
            request,
            timeout: TimeAmount(self.configuration.requestTimeout)
        )
        let status = response.status.code
        let collected: ByteBuffer
        if (200..<300).contains(status) {
            collected = try await response.body.collect(upTo: maxBodyBytes)
        } else {
            // Only the error code is wanted: a body too large to read is no reason to hide the status.
            collected = (try? await response.body.collect(upTo: Self.maxErrorBodyBytes)) ?? ByteBuffer()
        }
        // Neither headers nor bodies are logged: the request carries the Authorization header.
        self.logger.trace(
            "s3 request",
            metadata: ["s3.operation": "\(operation)", "s3.key": "\(key ?? "")", "s3.status": "\(status)"]
        )
        return Answer(status: status, headers: response.headers, body: collected)
    }

    /// The error for an answer that is not a success: `bucketMissing` when S3 says `NoSuchBucket`.
    private func failure(_ answer: Answer, operation: String, subject: String) -> S3Error {
        let code = Self.errorCode(answer)
        self.logger.debug(
            "s3 request failed",
            metadata: [
                "s3.operation": "\(operation)", "s3.key": "\(subject)", "s3.status": "\(answer.status)",
                "s3.error.code": "\(code ?? "-")",
            ]
        )
        if code == "NoSuchBucket" {
            return .bucketMissing(self.configuration.bucket)
        }
        return .unexpectedStatus(operation: operation, key: subject, status: answer.status, code: code)
    }

    /// The `<Code>` of an S3 XML error body (`NoSuchBucket`, `AccessDenied`, `SignatureDoesNotMatch`), if any. Only
    /// the code is kept: S3's error bodies may echo the access key ID and the string that was signed.
    private static func errorCode(_ answer: Answer) -> String? {
        guard answer.body.readableBytes > 0 else { return nil }
        return S3XML.text(of: "Code", in: String(buffer: answer.body)).map { String($0.prefix(64)) }
    }
}
