// Apple's DeviceCheck two-bits API (cwa-satellites §4.3, step 3): what iOS attestation asks Apple about a device, with
// the ES256 token Apple authenticates the backend by.

import AsyncHTTPClient
package import Crypto
import ENCrypto
import Foundation
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// The backend's DeviceCheck key: the team it belongs to, its key id, and the P-256 private key (PKCS#8 from Apple).
package struct DeviceCheckCredentials: Sendable {
    package var teamID: String
    package var keyID: String
    package var key: P256.Signing.PrivateKey

    package init(teamID: String, keyID: String, key: P256.Signing.PrivateKey) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
    }

    /// The bearer token: header `alg` ES256 and `kid`, claims `iss` (the team) and `iat`.
    func token(at time: Date) throws -> String {
        struct Claims: Encodable {
            var iss: String
            var iat: Int64
        }
        return try CompactJWS.es256(
            header: ["alg": "ES256", "kid": self.keyID],
            claims: Claims(iss: self.teamID, iat: Int64(time.timeIntervalSince1970)),
            key: self.key
        )
    }
}

/// The two bits Apple keeps for a device, and the month they were last set (`YYYY-MM`).
package struct DeviceBits: Sendable, Equatable, Codable {
    package var bit0: Bool
    package var bit1: Bool
    package var lastUpdateTime: String?

    package init(bit0: Bool, bit1: Bool, lastUpdateTime: String?) {
        self.bit0 = bit0
        self.bit1 = bit1
        self.lastUpdateTime = lastUpdateTime
    }

    enum CodingKeys: String, CodingKey {
        case bit0, bit1
        case lastUpdateTime = "last_update_time"
    }
}

/// Why Apple gave no answer to use.
package enum DeviceCheckFailure: Error, Equatable, Sendable {
    /// Apple says the device token is not one (400 `Missing or incorrectly formatted device token payload`): the
    /// reference's `DEVICE_TOKEN_INVALID`, the client's fault.
    case invalidDeviceToken
    /// Apple refused the backend, failed, or was not reached: not the client's fault.
    case unavailable(String)
}

/// The two calls iOS attestation makes.
package protocol DeviceCheck: Sendable {
    /// The device's bits, or `nil` when Apple has none for it.
    func queryTwoBits(deviceToken: String) async throws(DeviceCheckFailure) -> DeviceBits?
    /// Sets the device's bits (and so Apple's month of the last update).
    func updateTwoBits(deviceToken: String, bit0: Bool, bit1: Bool) async throws(DeviceCheckFailure)
}

/// DeviceCheck over HTTPS (`DEVICE_CHECK_URL`, Apple's `https://api.devicecheck.apple.com/v1`), one attempt per call
/// within `timeout`; run as a service of the application so its client is shut down after the servers.
package final class HTTPDeviceCheck: DeviceCheck, Service {
    private let http: HTTPClient
    private let baseURL: String
    private let credentials: DeviceCheckCredentials
    private let timeout: Duration
    /// The bearer token and when it was made: reused for 20 minutes (Apple refuses tokens older than an hour).
    private let cached = Mutex<(token: String, made: Date)?>(nil)
    private static let tokenLifetime: TimeInterval = 20 * 60
    private static let maxBodyBytes = 16 * 1024

    package init(baseURL: String, credentials: DeviceCheckCredentials, timeout: Duration = .seconds(5)) {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: TimeAmount(timeout), read: TimeAmount(timeout))
        configuration.redirectConfiguration = .disallow
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.credentials = credentials
        self.timeout = timeout
    }

    package func run() async throws {
        try? await gracefulShutdown()
        try await self.shutdown()
    }

    package func shutdown() async throws {
        try await self.http.shutdown()
    }

    package func queryTwoBits(deviceToken: String) async throws(DeviceCheckFailure) -> DeviceBits? {
        let (status, body) = try await self.post("query_two_bits", deviceToken: deviceToken, bits: nil)
        guard status == 200 else { throw Self.failure(status: status, body: body) }
        // A 200 without JSON ("Failed to find bit state") means Apple has no bits for the device.
        return try? JSONDecoder().decode(DeviceBits.self, from: body)
    }

    package func updateTwoBits(deviceToken: String, bit0: Bool, bit1: Bool) async throws(DeviceCheckFailure) {
        let (status, body) = try await self.post("update_two_bits", deviceToken: deviceToken, bits: (bit0, bit1))
        guard status == 200 else { throw Self.failure(status: status, body: body) }
    }

    static func failure(status: Int, body: Data) -> DeviceCheckFailure {
        if status == 400,
            String(decoding: body, as: UTF8.self).contains("Missing or incorrectly formatted device token payload")
        {
            return .invalidDeviceToken
        }
        return .unavailable("DeviceCheck answered \(status)")
    }

    private func bearer(now: Date) throws(DeviceCheckFailure) -> String {
        if let cached = self.cached.withLock({ $0 }), now.timeIntervalSince(cached.made) < Self.tokenLifetime {
            return cached.token
        }
        guard let token = try? self.credentials.token(at: now) else { throw .unavailable("could not sign the token") }
        self.cached.withLock { $0 = (token, now) }
        return token
    }

    private func post(
        _ call: String,
        deviceToken: String,
        bits: (Bool, Bool)?
    ) async throws(DeviceCheckFailure) -> (Int, Data) {
        let body = DeviceCheckRequest(
            deviceToken: deviceToken,
            transactionID: UUID().uuidString,
            timestamp: Int64(Date().timeIntervalSince1970 * 1000),
            bit0: bits?.0,
            bit1: bits?.1
        )
        var request = HTTPClientRequest(url: "\(self.baseURL)/\(call)")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Authorization", value: "Bearer \(try self.bearer(now: Date()))")
        guard let json = try? JSONEncoder().encode(body) else { throw .unavailable("no body") }
        request.body = .bytes(ByteBuffer(bytes: json))
        do {
            let response = try await self.http.execute(request, timeout: TimeAmount(self.timeout))
            let answer = try await response.body.collect(upTo: Self.maxBodyBytes)
            return (Int(response.status.code), Data(answer.readableBytesView))
        } catch {
            throw .unavailable("DeviceCheck not reached: \(String(reflecting: type(of: error)))")
        }
    }
}

/// The body of a DeviceCheck call (Apple's DeviceCheck API, "Accessing and Modifying Per-Device Data"): the two bits
/// only on `update_two_bits`.
private struct DeviceCheckRequest: Encodable {
    var deviceToken: String
    var transactionID: String
    var timestamp: Int64
    var bit0: Bool?
    var bit1: Bool?

    enum CodingKeys: String, CodingKey {
        case deviceToken = "device_token"
        case transactionID = "transaction_id"
        case timestamp, bit0, bit1
    }
}
