// Each port's OpenAPI document and its router agree.

import ENAttestation
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import DataDonationService

@Suite("OpenAPI documents")
struct OpenAPITests {
    static func operations(in resource: String) throws -> [String] {
        let url = try #require(Bundle.module.url(forResource: resource, withExtension: "yaml") ?? Self.source(resource))
        return try OpenAPIDocument.operations(in: url).map { "\($0.method) \($0.path)" }
    }

    private static func source(_ resource: String) -> URL? {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Services/DataDonation/\(resource).yaml")
    }

    @Test("every documented operation is documented on its own port, and every route of ours is documented")
    func documentsMatchRoutes() throws {
        let common = ["GET /health/live", "GET /health/ready", "GET /metrics", "GET /openapi.yaml"]
        let app =
            ["android", "ios"].flatMap { platform in
                ["dat", "otp", "els", "srs"].map { "POST /version/v1/\(platform)/\($0)" }
            } + ["POST /submission/mobile-analytics", "POST /submission/mobile-analytics-events"]
        let redemption = ["otp", "els", "srs", "srs/redemption"].map { "POST /version/v1/\($0)" }
        #expect(Set(try Self.operations(in: "openapi")) == Set(app + common))
        #expect(Set(try Self.operations(in: "openapi-internal")) == Set(redemption + common))
    }

    @Test("each router mounts exactly the operations its document lists, NHS routes included, on in-memory storage")
    func routersMatchDocuments() throws {
        let world = try DonationWorld()
        let configuration = try world.configuration(TestNHS.settings())
        let runtime = DataDonationRuntime(
            configuration: configuration,
            dependencies: .inMemory(deviceCheck: UnansweredDeviceCheck()),
            environment: .testing()
        )
        let documented = (
            app: Set(try Self.operations(in: "openapi")), internal: Set(try Self.operations(in: "openapi-internal"))
        )
        try DataDonation.buildPublicRouter(runtime).expectMounts(exactly: documented.app)
        try DataDonation.buildInternalRouter(runtime).expectMounts(
            exactly: documented.internal,
            internalRoutes: InternalController.table
        )
    }
}

/// Apple's DeviceCheck for tests that route no iOS request: every call fails as an unreachable Apple would.
struct UnansweredDeviceCheck: DeviceCheck {
    func queryTwoBits(deviceToken: String) async throws(DeviceCheckFailure) -> DeviceBits? {
        throw .unavailable("no DeviceCheck in this test")
    }

    func updateTwoBits(deviceToken: String, bit0: Bool, bit1: Bool) async throws(DeviceCheckFailure) {
        throw .unavailable("no DeviceCheck in this test")
    }
}
