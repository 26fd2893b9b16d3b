// The DeviceCheck client against a server of the DeviceCheck protocol that the test starts (ENTestSupport): the two
// calls, Apple's answers for unknown and malformed devices, and a backend Apple does not accept.

import Crypto
import ENAttestation
import ENTestSupport
import Foundation
import Testing

@Suite("DeviceCheck client")
struct DeviceCheckTests {
    /// Runs `body` with a client of `server` at `baseURL` (signing with `key`, by default the one the server knows),
    /// and shuts the client down after.
    static func withClient(
        _ server: TestDeviceCheckServer,
        _ baseURL: String,
        key: P256.Signing.PrivateKey? = nil,
        _ body: (HTTPDeviceCheck) async throws -> Void
    ) async throws {
        let client = HTTPDeviceCheck(
            baseURL: baseURL,
            credentials: DeviceCheckCredentials(teamID: server.teamID, keyID: server.keyID, key: key ?? server.key),
            timeout: .seconds(5)
        )
        do {
            try await body(client)
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    static let device = Data((0..<2000).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()

    @Test("a new device has no bits; after an update it has them, with this month; a blocked device shows both bits")
    func bits() async throws {
        let server = TestDeviceCheckServer()
        try await server.run { baseURL in
            try await Self.withClient(server, baseURL) { client in
                #expect(try await client.queryTwoBits(deviceToken: Self.device) == nil)
                try await client.updateTwoBits(deviceToken: Self.device, bit0: false, bit1: false)
                #expect(
                    try await client.queryTwoBits(deviceToken: Self.device)
                        == DeviceBits(bit0: false, bit1: false, lastUpdateTime: TestDeviceCheckServer.month())
                )
                let blocked = Data("blocked".utf8).base64EncodedString()
                server.set(blocked, TestDeviceBits(bit0: true, bit1: true, month: "2026-01"))
                #expect(
                    try await client.queryTwoBits(deviceToken: blocked)
                        == DeviceBits(bit0: true, bit1: true, lastUpdateTime: "2026-01")
                )
                #expect(server.answered == ["query_two_bits", "update_two_bits", "query_two_bits", "query_two_bits"])
            }
        }
    }

    @Test("a malformed device token is the client's fault (invalidDeviceToken); a key Apple does not know is not")
    func refusals() async throws {
        let server = TestDeviceCheckServer()
        try await server.run { baseURL in
            try await Self.withClient(server, baseURL) { client in
                await #expect(throws: DeviceCheckFailure.invalidDeviceToken) {
                    try await client.queryTwoBits(deviceToken: "not base64!")
                }
            }
            try await Self.withClient(server, baseURL, key: P256.Signing.PrivateKey()) { stranger in
                await #expect(throws: DeviceCheckFailure.unavailable("DeviceCheck answered 401")) {
                    try await stranger.updateTwoBits(deviceToken: Self.device, bit0: false, bit1: false)
                }
            }
            #expect(server.bits(Self.device) == nil, "the refused update changed nothing")
        }
    }

    @Test("DeviceCheck not reached: unavailable")
    func unreachable() async throws {
        let server = TestDeviceCheckServer()
        let stopped = Mutexed("")
        try await server.run { url in stopped.withLock { $0 = url } }
        try await Self.withClient(server, stopped.withLock { $0 }) { client in
            let result: Result<DeviceBits?, DeviceCheckFailure>
            do throws(DeviceCheckFailure) {
                result = .success(try await client.queryTwoBits(deviceToken: Self.device))
            } catch {
                result = .failure(error)
            }
            guard case .failure(.unavailable) = result else {
                Issue.record("expected unavailable, got \(result)")
                return
            }
        }
    }
}
