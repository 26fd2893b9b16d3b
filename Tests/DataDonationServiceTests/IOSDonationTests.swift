// iOS requests against a DeviceCheck server the test runs (cwa-satellites §4.3): a new device, a used device token,
// a blocked device, quotas, one new API token per month.

import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import NIOCore
import PostgresNIO
import SwiftProtobuf
import Testing

@testable import DataDonationService

@Suite("iOS donations", .postgres(DataDonationMigrations.group))
struct IOSDonationTests {
    private static func iosData() -> PPADataIOS {
        var data = PPADataIOS()
        let android = DonationWorld.analytics()
        data.exposureRiskMetadataSet = android.exposureRiskMetadataSet
        data.newExposureWindows = android.newExposureWindows
        data.clientMetadata.cwaVersion.major = 3
        data.clientMetadata.iosVersion.major = 17
        return data
    }

    @Test("a new device gets its API token registered with Apple; a used device token, a blocked device are refused")
    func newDeviceUsedTokenBlocked() async throws {
        let world = try DonationWorld()
        try await world.deviceCheck.run { url in
            try await world.withService(deviceCheckURL: url) { service in
                let device = DonationWorld.deviceToken()
                let apiToken = UUID().uuidString
                let first = try await service.post(
                    "ios/dat",
                    try DonationWorld.iosAnalytics(Self.iosData(), deviceToken: device, apiToken: apiToken)
                )
                #expect(first.status == .ok)
                #expect(world.deviceCheck.answered == ["query_two_bits", "update_two_bits"])
                #expect(world.deviceCheck.bits(device)?.month == TestDeviceCheckServer.month())
                #expect(try await service.count("api_token", where: "last_used_analytics IS NOT NULL") == 1)
                #expect(
                    try await service.count("client_metadata", where: "platform = 'ios' AND os_version = '17.0.0'") == 1
                )

                // The same device token again (a replay), even with another API token.
                let before = try await service.stored()
                let replay = try await service.post(
                    "ios/srs",
                    try DonationWorld.iosSelfReport(otp: UUID().uuidString, deviceToken: device, apiToken: apiToken),
                    headers: DonationService.real
                )
                #expect(replay.status == .forbidden)
                #expect(replay.errorCode == "DEVICE_TOKEN_REDEEMED")
                #expect(try await service.stored() == before)

                // A device Apple marks blocked (both bits set).
                let blocked = DonationWorld.deviceToken()
                world.deviceCheck.set(blocked, TestDeviceBits(bit0: true, bit1: true, month: "2025-01"))
                let refused = try await service.post(
                    "ios/dat",
                    try DonationWorld.iosAnalytics(Self.iosData(), deviceToken: blocked, apiToken: UUID().uuidString)
                )
                #expect(refused.status == .unauthorized)
                #expect(refused.errorCode == "DEVICE_BLOCKED")
                #expect(try await service.stored() == before)
            }
        }
    }

    @Test("quotas: analytics once per 23 h 55 min per API token; a second new API token in a month is refused")
    func quotas() async throws {
        let world = try DonationWorld()
        try await world.deviceCheck.run { url in
            try await world.withService(deviceCheckURL: url) { service in
                let apiToken = UUID().uuidString
                let first = try await service.post(
                    "ios/dat",
                    try DonationWorld.iosAnalytics(
                        Self.iosData(),
                        deviceToken: DonationWorld.deviceToken(),
                        apiToken: apiToken
                    )
                )
                #expect(first.status == .ok)
                let before = try await service.stored()
                let again = try await service.post(
                    "ios/dat",
                    try DonationWorld.iosAnalytics(
                        Self.iosData(),
                        deviceToken: DonationWorld.deviceToken(),
                        apiToken: apiToken
                    )
                )
                #expect(again.status == .tooManyRequests)
                #expect(again.errorCode == "API_TOKEN_QUOTA_EXCEEDED")
                #expect(try await service.stored() == before)

                // The same token may still create a self-report OTP: each scenario has its own quota.
                let otp = try await service.post(
                    "ios/srs",
                    try DonationWorld.iosSelfReport(
                        otp: UUID().uuidString,
                        deviceToken: DonationWorld.deviceToken(),
                        apiToken: apiToken
                    ),
                    headers: DonationService.real
                )
                #expect(otp.status == .ok)

                // A device whose bits Apple updated this month asks with a new API token.
                let device = DonationWorld.deviceToken()
                world.deviceCheck.set(
                    device,
                    TestDeviceBits(bit0: false, bit1: false, month: TestDeviceCheckServer.month())
                )
                let fresh = try await service.stored()
                let second = try await service.post(
                    "ios/dat",
                    try DonationWorld.iosAnalytics(Self.iosData(), deviceToken: device, apiToken: UUID().uuidString)
                )
                #expect(second.status == .forbidden)
                #expect(second.errorCode == "API_TOKEN_ALREADY_ISSUED")
                #expect(try await service.stored() == fresh)

                // An expired API token.
                try await service.database.client.query(
                    "UPDATE api_token SET expiration_date = (now() - interval '40 days')::date"
                )
                let expired = try await service.post(
                    "ios/srs",
                    try DonationWorld.iosSelfReport(
                        otp: UUID().uuidString,
                        deviceToken: DonationWorld.deviceToken(),
                        apiToken: apiToken
                    ),
                    headers: DonationService.real
                )
                #expect(expired.status == .forbidden)
                #expect(expired.errorCode == "API_TOKEN_EXPIRED")
            }
        }
    }

    @Test("syntax: a short device token or a non-UUID API token is refused before Apple is asked")
    func syntax() async throws {
        let world = try DonationWorld()
        try await world.deviceCheck.run { url in
            try await world.withService(deviceCheckURL: url) { service in
                let short = try await service.post(
                    "ios/dat",
                    try DonationWorld.iosAnalytics(Self.iosData(), deviceToken: "AAAA", apiToken: UUID().uuidString)
                )
                #expect(short.status == .badRequest)
                #expect(short.errorCode == "DEVICE_TOKEN_SYNTAX_ERROR")
                let badToken = try await service.post(
                    "ios/dat",
                    try DonationWorld.iosAnalytics(
                        Self.iosData(),
                        deviceToken: DonationWorld.deviceToken(),
                        apiToken: "x"
                    )
                )
                #expect(badToken.errorCode == "DEVICE_TOKEN_SYNTAX_ERROR")
                #expect(world.deviceCheck.answered.isEmpty)
                #expect(try await service.stored().values.allSatisfy { $0 == 0 })
            }
        }
    }

    @Test("iOS error-log OTPs are attested (beyond the reference): Apple is asked and the device token spent")
    func errorLogAttested() async throws {
        let world = try DonationWorld()
        try await world.deviceCheck.run { url in
            try await world.withService(deviceCheckURL: url) { service in
                var message = ELSOneTimePasswordRequestIOS()
                message.payload.otp = UUID().uuidString
                message.authentication = DonationWorld.ios(
                    deviceToken: DonationWorld.deviceToken(),
                    apiToken: UUID().uuidString
                )
                let reply = try await service.post("ios/els", try message.buffer())
                #expect(reply.status == .ok)
                #expect(world.deviceCheck.answered.first == "query_two_bits")
                #expect(try await service.count("device_token") == 1)
                message.authentication.deviceToken = "not base64 !"
                let bad = try await service.post("ios/els", try message.buffer())
                #expect(bad.errorCode == "DEVICE_TOKEN_SYNTAX_ERROR")
            }
        }
    }

    @Test("DeviceCheck unreachable: 503 and nothing stored")
    func deviceCheckDown() async throws {
        let world = try DonationWorld()
        try await world.withService(deviceCheckURL: "http://127.0.0.1:1/v1", deviceCheckTimeout: .seconds(2)) {
            service in
            let reply = try await service.post(
                "ios/dat",
                try DonationWorld.iosAnalytics(
                    Self.iosData(),
                    deviceToken: DonationWorld.deviceToken(),
                    apiToken: UUID().uuidString
                )
            )
            #expect(reply.status == .serviceUnavailable)
            #expect(reply.errorCode == "DEVICE_CHECK_UNAVAILABLE")
            #expect(try await service.stored().values.allSatisfy { $0 == 0 })
        }
    }
}
