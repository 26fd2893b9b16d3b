// A server of Apple's DeviceCheck two-bits protocol for tests (cwa-satellites §4.3, step 3), run on a real socket:
// it checks the bearer token as Apple does (ES256 with the registered key, its key id and team, issued within the
// hour), refuses malformed device tokens with Apple's message, and keeps the bits of each device in memory.

package import Crypto
import ENCrypto
package import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// What one device's bits are on the test server.
package struct TestDeviceBits: Sendable, Equatable {
    package var bit0: Bool
    package var bit1: Bool
    /// `YYYY-MM` of the last update.
    package var month: String

    package init(bit0: Bool, bit1: Bool, month: String) {
        self.bit0 = bit0
        self.bit1 = bit1
        self.month = month
    }
}

/// The protocol's two endpoints under `/v1`, for the team, key id and public key it was made with.
package final class TestDeviceCheckServer: Sendable {
    package let teamID: String
    package let keyID: String
    package let key: P256.Signing.PrivateKey
    private let devices = Mutexed<[String: TestDeviceBits]>([:])
    private let calls = Mutexed<[String]>([])

    package init(teamID: String = "TEAM123456", keyID: String = "KEY1234567") {
        self.teamID = teamID
        self.keyID = keyID
        self.key = P256.Signing.PrivateKey()
    }

    /// Sets a device's bits (a device Apple knows, blocked or not).
    package func set(_ deviceToken: String, _ bits: TestDeviceBits) {
        self.devices.withLock { $0[deviceToken] = bits }
    }

    package func bits(_ deviceToken: String) -> TestDeviceBits? {
        self.devices.withLock { $0[deviceToken] }
    }

    /// The calls answered so far (`query_two_bits`, `update_two_bits`), in order.
    package var answered: [String] { self.calls.withLock { $0 } }

    /// The current month as DeviceCheck writes it.
    package static func month(of date: Date = Date()) -> String {
        let components = Calendar(identifier: .gregorian).dateComponents(
            in: TimeZone(identifier: "UTC")!,
            from: date
        )
        return String(format: "%04d-%02d", components.year ?? 0, components.month ?? 0)
    }

    /// Runs the server on a free port of 127.0.0.1 for `body`, which gets its base URL (`http://127.0.0.1:PORT/v1`).
    package func run(_ body: @Sendable (_ baseURL: String) async throws -> Void) async throws {
        let router = Router()
        router.post("/v1/query_two_bits") { request, context in
            try await self.answer(request, context, update: false)
        }
        router.post("/v1/update_two_bits") { request, context in
            try await self.answer(request, context, update: true)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await LiveServer.run(app) { port in try await body("http://127.0.0.1:\(port)/v1") }
    }

    private struct Call: Decodable {
        var device_token: String?
        var transaction_id: String?
        var timestamp: Int64?
        var bit0: Bool?
        var bit1: Bool?
    }

    private func answer(_ request: Request, _ context: BasicRequestContext, update: Bool) async throws -> Response {
        guard self.authorized(request.headers[.authorization]) else {
            return Self.text(.unauthorized, "Unable to verify authorization token")
        }
        let body = try await request.body.collect(upTo: 64 * 1024)
        guard let call = try? JSONDecoder().decode(Call.self, from: Data(body.readableBytesView)),
            let token = call.device_token, !token.isEmpty, Data(base64Encoded: token) != nil,
            call.transaction_id != nil, call.timestamp != nil
        else { return Self.text(.badRequest, "Missing or incorrectly formatted device token payload") }
        self.calls.withLock { $0.append(update ? "update_two_bits" : "query_two_bits") }
        if update {
            self.set(token, TestDeviceBits(bit0: call.bit0 ?? false, bit1: call.bit1 ?? false, month: Self.month()))
            return Response(status: .ok)
        }
        guard let bits = self.bits(token) else { return Self.text(.ok, "Failed to find bit state") }
        let json = #"{"bit0":\#(bits.bit0),"bit1":\#(bits.bit1),"last_update_time":"\#(bits.month)"}"#
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: json))
        )
    }

    /// `Bearer <ES256 JWT>` with this server's key id and team, issued within the last hour, signed by its key.
    private func authorized(_ header: String?) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let parts = header.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let jwsHeader = JWSHeader.decode(parts[0]), jwsHeader.alg == "ES256",
            jwsHeader.kid == self.keyID, let claimsBytes = Base64URL.decode(parts[1]),
            let claims = try? JSONSerialization.jsonObject(with: Data(claimsBytes)) as? [String: Any],
            claims["iss"] as? String == self.teamID, let issued = claims["iat"] as? Int,
            abs(Date().timeIntervalSince1970 - Double(issued)) < 3600,
            let signature = Base64URL.decode(parts[2])
        else { return false }
        return CompactJWS.isValidES256(signature, of: Array("\(parts[0]).\(parts[1])".utf8), key: self.key.publicKey)
    }

    private static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/plain"],
            body: .init(byteBuffer: ByteBuffer(string: text))
        )
    }
}
