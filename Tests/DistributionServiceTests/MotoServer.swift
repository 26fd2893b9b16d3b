// A moto server (`python3 -m moto.server`, or `EN_MOTO_PYTHON -m moto.server`) on a free local port: a real S3-protocol endpoint for the store's tests.

import AsyncHTTPClient
import Crypto
import ENCrypto
import ENTestSupport
import Foundation
import NIOCore
import NIOHTTP1

@testable import DistributionService

/// One moto process, started on port 0 (werkzeug prints the port it bound) and stopped by `stop()`.
final class MotoServer: Sendable {
    private let process: ServiceProcess
    /// `http://127.0.0.1:<port>`.
    let endpoint: String

    private init(process: ServiceProcess, endpoint: String) {
        self.process = process
        self.endpoint = endpoint
    }

    /// The Python that runs moto: `EN_MOTO_PYTHON` (what `deploy/local/moto.sh` prints, which `make test` sets), else
    /// `python3` from the `PATH`.
    private static var python: (executable: URL, arguments: [String]) {
        if let path = ProcessInfo.processInfo.environment["EN_MOTO_PYTHON"], !path.isEmpty {
            return (URL(fileURLWithPath: path), [])
        }
        return (URL(fileURLWithPath: "/usr/bin/env"), ["python3"])
    }

    /// Whether that Python can `import moto.server`, checked once. With `EN_REQUIRE_S3=1` the tests run regardless,
    /// so a machine that should have moto fails instead of skipping.
    static let isAvailable: Bool = {
        if ProcessInfo.processInfo.environment["EN_REQUIRE_S3"] == "1" {
            return true
        }
        let probe = Process()
        probe.executableURL = MotoServer.python.executable
        probe.arguments = MotoServer.python.arguments + ["-c", "import moto.server"]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        do {
            try probe.run()
        } catch {
            return false
        }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }()

    /// Starts moto and waits (at most 60 s: several start at once, and a loaded machine is slow) until it answers HTTP.
    static func start() async throws -> MotoServer {
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONUNBUFFERED"] = "1"
        let process = try ServiceProcess.start(
            Self.python.executable,
            arguments: Self.python.arguments + ["-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
            environment: environment
        )
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let port = self.port(in: process.output) {
                let server = MotoServer(process: process, endpoint: "http://127.0.0.1:\(port)")
                if (try? await HTTP.get("\(server.endpoint)/moto-api/")) != nil {
                    return server
                }
            }
            if process.output.contains("Traceback") {
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        process.signal(SIGKILL)
        throw MotoServerError(message: "moto did not start; output:\n\(process.output)")
    }

    /// The port of werkzeug's ` * Running on http://127.0.0.1:<port>` line.
    private static func port(in output: String) -> Int? {
        guard let range = output.range(of: "Running on http://127.0.0.1:") else { return nil }
        let digits = output[range.upperBound...].prefix { $0.isASCII && $0.isNumber }
        return Int(digits)
    }

    /// Ends the process and waits for it. SIGKILL, because a child of the test process inherits the blocked signal
    /// mask of the thread that spawned it, and Python never unblocks SIGTERM: `terminate()` would leave moto running.
    func stop() async {
        self.process.signal(SIGKILL)
        _ = try? await self.process.waitForExit(timeout: .seconds(10))
    }

    // MARK: - Requests beside the store

    /// A request signed like the store's (the `Host` header included), for what the store does not do itself.
    static func signedRequest(
        _ method: HTTPMethod,
        _ address: String,
        body: [UInt8] = [],
        headers: [(String, String)] = [],
        signer: SigV4Signer
    ) throws -> HTTPClientRequest {
        guard let url = URL(string: address) else { throw MotoServerError(message: "bad URL \(address)") }
        var request = HTTPClientRequest(url: address)
        request.method = method
        request.headers.add(name: "Host", value: SigV4Signer.host(of: url))
        for (name, value) in headers {
            request.headers.add(name: name, value: value)
        }
        let payload = Hex.encode(SHA256.hash(data: body))
        for (name, value) in signer.sign(
            method: method.rawValue,
            url: url,
            headers: headers,
            payloadSHA256: payload,
            date: Date()
        ) {
            request.headers.add(name: name, value: value)
        }
        if !body.isEmpty {
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        return request
    }

    /// Sends `request` and returns the status, headers and body text.
    static func send(
        _ request: HTTPClientRequest,
        on client: HTTPClient
    ) async throws -> (status: UInt, headers: HTTPHeaders, body: String) {
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (response.status.code, response.headers, String(buffer: body))
    }

    /// Creates `bucket` (moto takes any credentials until `requireSignatures` is called).
    func createBucket(_ bucket: String, client: HTTPClient) async throws {
        let signer = SigV4Signer(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "any", region: "us-east-1")
        let reply = try await Self.send(
            try Self.signedRequest(.PUT, "\(self.endpoint)/\(bucket)", signer: signer),
            on: client
        )
        guard reply.status == 200 else {
            throw MotoServerError(message: "creating bucket \(bucket) answered \(reply.status): \(reply.body)")
        }
    }

    /// Creates an IAM user allowed `s3:*` and returns its keys, then makes moto verify the signature (with botocore's
    /// signer) and the permissions of every later request.
    func requireSignatures(client: HTTPClient) async throws -> (accessKeyID: String, secretAccessKey: String) {
        let iam = SigV4Signer(
            accessKeyID: "AKIAIOSFODNN7EXAMPLE",
            secretAccessKey: "any",
            region: "us-east-1",
            service: "iam"
        )
        let policy = #"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#
        _ = try await self.iam([("Action", "CreateUser"), ("UserName", "publisher")], signer: iam, client: client)
        _ = try await self.iam(
            [
                ("Action", "PutUserPolicy"), ("UserName", "publisher"), ("PolicyName", "publish"),
                ("PolicyDocument", policy),
            ],
            signer: iam,
            client: client
        )
        let created = try await self.iam(
            [("Action", "CreateAccessKey"), ("UserName", "publisher")],
            signer: iam,
            client: client
        )
        guard let accessKeyID = S3XML.text(of: "AccessKeyId", in: created),
            let secretAccessKey = S3XML.text(of: "SecretAccessKey", in: created)
        else {
            throw MotoServerError(message: "CreateAccessKey gave no key: \(created)")
        }
        // The number of requests moto lets through unchecked: from now on, none.
        var reset = HTTPClientRequest(url: "\(self.endpoint)/moto-api/reset-auth")
        reset.method = .POST
        reset.headers.add(name: "Content-Type", value: "text/plain")
        reset.body = .bytes(ByteBuffer(string: "0"))
        let reply = try await Self.send(reset, on: client)
        guard reply.status == 200 else {
            throw MotoServerError(message: "reset-auth answered \(reply.status): \(reply.body)")
        }
        return (accessKeyID, secretAccessKey)
    }

    /// One IAM query-API call (form-encoded POST to `/`, which moto routes by the signature's service).
    private func iam(_ parameters: [(String, String)], signer: SigV4Signer, client: HTTPClient) async throws -> String {
        let form = (parameters + [("Version", "2010-05-08")])
            .map { "\(SigV4Signer.uriEncode($0.0, keepSlash: false))=\(SigV4Signer.uriEncode($0.1, keepSlash: false))" }
            .joined(separator: "&")
        let request = try Self.signedRequest(
            .POST,
            "\(self.endpoint)/",
            body: Array(form.utf8),
            headers: [("Content-Type", "application/x-www-form-urlencoded")],
            signer: signer
        )
        let reply = try await Self.send(request, on: client)
        guard reply.status == 200 else {
            throw MotoServerError(message: "IAM \(parameters.first?.1 ?? "") answered \(reply.status): \(reply.body)")
        }
        return reply.body
    }
}

/// moto did not start or refused a set-up request.
struct MotoServerError: Error, CustomStringConvertible {
    var message: String
    var description: String { self.message }
}
