// Android requests through the router over PostgreSQL: SafetyNet and Play Integrity verdicts made with the test's own
// chains and keys; every refusal answers the reference's code and stores nothing.

import ENAttestation
import ENCrypto
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

@Suite("Android donations", .postgres(DataDonationMigrations.group))
struct AndroidDonationTests {
    @Test("an attested analytics donation is stored as dated rows without device data")
    func analyticsStored() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let reply = try await service.post(
                "android/dat",
                try world.androidAnalytics(DonationWorld.analytics(windows: 3))
            )
            #expect(reply.status == .ok)
            #expect(try reply.string("expirationDate")?.hasSuffix("Z") == true)
            #expect(
                try await service.count("exposure_risk_metadata", where: "risk_level = 3 AND federal_state = 3") == 1
            )
            #expect(try await service.count("test_result_metadata", where: "test_result = 3") == 1)
            #expect(try await service.count("key_submission_metadata", where: "submission_type = 1") == 1)
            #expect(
                try await service.count(
                    "exposure_window",
                    where: "context = 'new' AND cardinality(typical_attenuations) = 2"
                ) == 3
            )
            #expect(
                try await service.count(
                    "exposure_window",
                    where: "context = 'at_test_registration' AND test_result = 3"
                ) == 1
            )
            #expect(
                try await service.count("client_metadata", where: "platform = 'android' AND cwa_version = '3.0.0'") == 1
            )
            #expect(
                try await service.count(
                    "exposure_risk_metadata",
                    where: "submitted_at = (now() AT TIME ZONE 'UTC')::date"
                ) == 1
            )
            #expect(try await service.count("salt") == 1)
        }
    }

    @Test("Play Integrity and SafetyNet both create OTPs; the OTP is stored only as its hash")
    func bothVerdicts() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let otp = UUID().uuidString.lowercased()
            let viaPlay = try await service.post("android/els", try world.androidErrorLog(otp: otp, .playIntegrity()))
            #expect(viaPlay.status == .ok)
            let viaSafetyNet = try await service.post("android/els", try world.androidErrorLog())
            #expect(viaSafetyNet.status == .ok)
            #expect(try await service.count("one_time_password", where: "kind = 'error_log'") == 2)
            #expect(try await service.count("one_time_password", where: "otp_hash = '\(otp)'") == 0)
            #expect(
                try await service.count("one_time_password", where: "otp_hash = encode(sha256('\(otp)'::bytea), 'hex')")
                    == 1
            )
        }
    }

    /// One refused request: its code, its status, and no row anywhere.
    private func expectRefused(
        _ service: DonationService,
        _ uri: String,
        _ body: ByteBuffer,
        headers: HTTPFields = DonationService.protobuf,
        status: HTTPResponse.Status,
        code: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let before = try await service.stored()
        let reply = try await service.post(uri, body, headers: headers)
        #expect(reply.status == status, sourceLocation: sourceLocation)
        #expect(reply.errorCode == code, sourceLocation: sourceLocation)
        #expect(
            try await service.stored() == before,
            "a refused request stores nothing",
            sourceLocation: sourceLocation
        )
    }

    @Test("SafetyNet refusals: wrong root, wrong host, wrong nonce, stale, wrong package, two digests, weak device")
    func safetyNetRefusals() async throws {
        let world = try DonationWorld()
        let stranger = try AttestationFixture()
        try await world.withService { service in
            // A chain to another root.
            var message = SRSOneTimePasswordRequestAndroid()
            message.payload.otp = UUID().uuidString
            message.payload.androidID = Data(repeating: 7, count: 8)
            var foreign = stranger
            foreign.payload = try message.payload.serializedBytes()
            message.authentication.salt = foreign.salt.base64EncodedString()
            message.authentication.safetyNetJws = try foreign.safetyNetJWS(foreign.safetyNetClaims())
            try await self.expectRefused(
                service,
                "android/srs",
                try message.buffer(),
                headers: DonationService.real,
                status: .unauthorized,
                code: "JWS_SIGNATURE_VERIFICATION_FAILED"
            )
            // A leaf for another host, under the trusted root.
            var host = world.safetyNet
            host.payload = try message.payload.serializedBytes()
            let hostLeaf = try world.safetyNet.intermediate.leaf(hostname: "attest.example.com")
            message.authentication.salt = host.salt.base64EncodedString()
            message.authentication.safetyNetJws = try host.safetyNetJWS(
                host.safetyNetClaims(),
                signer: hostLeaf,
                chain: [hostLeaf, world.safetyNet.intermediate]
            )
            try await self.expectRefused(
                service,
                "android/srs",
                try message.buffer(),
                headers: DonationService.real,
                status: .forbidden,
                code: "FAILED_ATTESTATION_HOSTNAME_VALIDATION"
            )
            let cases: [(String, (inout [String: Any]) -> Void)] = [
                ("NONCE_MISMATCH", { $0["nonce"] = Data(repeating: 1, count: 32).base64EncodedString() }),
                (
                    "ATTESTATION_EXPIRED",
                    { $0["timestampMs"] = Int64(Date().addingTimeInterval(-7300).timeIntervalSince1970 * 1000) }
                ),
                ("APK_PACKAGE_NAME_MISMATCH", { $0["apkPackageName"] = "com.example.other" }),
                (
                    "APK_CERTIFICATE_MISMATCH",
                    {
                        $0["apkCertificateDigestSha256"] = [
                            AttestationFixture.digest.base64EncodedString(),
                            AttestationFixture.digest.base64EncodedString(),
                        ]
                    }
                ),
                ("BASIC_INTEGRITY_REQUIRED", { $0["basicIntegrity"] = false }),
                ("CTS_PROFILE_MATCH_REQUIRED", { $0["ctsProfileMatch"] = false }),
                ("EVALUATION_TYPE_HARDWARE_BACKED_REQUIRED", { $0["evaluationType"] = "BASIC" }),
            ]
            for (code, edit) in cases {
                try await self.expectRefused(
                    service,
                    "android/srs",
                    try world.androidSelfReport(.safetyNet(edit)),
                    headers: DonationService.real,
                    status: code == "JWS_SIGNATURE_VERIFICATION_FAILED" ? .unauthorized : .forbidden,
                    code: code
                )
            }
            // Error-log OTPs need integrity too; survey OTPs and analytics do not.
            try await self.expectRefused(
                service,
                "android/els",
                try world.androidErrorLog(.safetyNet { $0["basicIntegrity"] = false }),
                status: .forbidden,
                code: "BASIC_INTEGRITY_REQUIRED"
            )
            let weak = try await service.post(
                "android/dat",
                try world.androidAnalytics(DonationWorld.analytics(), .safetyNet { $0["basicIntegrity"] = false })
            )
            #expect(weak.status == .ok)
        }
    }

    @Test("Play Integrity refusals: another key, wrong nonce, unrecognised app, missing device integrity")
    func playIntegrityRefusals() async throws {
        let world = try DonationWorld()
        let other = PlayIntegrityKeys()
        try await world.withService { service in
            var message = SRSOneTimePasswordRequestAndroid()
            message.payload.otp = UUID().uuidString
            message.payload.androidID = Data(repeating: 9, count: 12)
            var fixture = world.safetyNet
            fixture.payload = try message.payload.serializedBytes()
            message.authentication.salt = fixture.salt.base64EncodedString()
            message.authentication.safetyNetJws = try world.play.token(
                PlayIntegrityKeys.verdict(fixture),
                decryption: other.decryption
            )
            try await self.expectRefused(
                service,
                "android/srs",
                try message.buffer(),
                headers: DonationService.real,
                status: .unauthorized,
                code: "JWS_SIGNATURE_VERIFICATION_FAILED"
            )
            let cases: [(String, (inout [String: Any]) -> Void)] = [
                (
                    "NONCE_MISMATCH",
                    { verdict in
                        var request = verdict["requestDetails"] as! [String: Any]
                        request["requestHash"] = Data(repeating: 2, count: 32).base64EncodedString()
                        verdict["requestDetails"] = request
                    }
                ),
                (
                    "APP_NOT_RECOGNIZED",
                    { verdict in
                        var app = verdict["appIntegrity"] as! [String: Any]
                        app["appRecognitionVerdict"] = "UNRECOGNIZED_VERSION"
                        verdict["appIntegrity"] = app
                    }
                ),
                (
                    "EVALUATION_TYPE_HARDWARE_BACKED_REQUIRED",
                    { $0["deviceIntegrity"] = ["deviceRecognitionVerdict": ["MEETS_DEVICE_INTEGRITY"]] }
                ),
            ]
            for (code, edit) in cases {
                try await self.expectRefused(
                    service,
                    "android/srs",
                    try world.androidSelfReport(.playIntegrity(edit)),
                    headers: DonationService.real,
                    status: .forbidden,
                    code: code
                )
            }
        }
    }

    @Test("ANDROID_ATTESTATION=play-integrity refuses SafetyNet statements")
    func modeSelectsVerdicts() async throws {
        let world = try DonationWorld()
        try await world.withService(["ANDROID_ATTESTATION": "play-integrity"]) { service in
            try await self.expectRefused(
                service,
                "android/els",
                try world.androidErrorLog(),
                status: .unauthorized,
                code: "JWS_SIGNATURE_VERIFICATION_FAILED"
            )
            #expect(try await service.post("android/els", try world.androidErrorLog(.playIntegrity())).status == .ok)
        }
    }

    @Test("a salt is reusable within the attestation validity, refused after it")
    func saltWindow() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
            #expect(try await service.post("android/els", try world.androidErrorLog()).status == .ok)
            var message = ELSOneTimePasswordRequestAndroid()
            message.payload.otp = UUID().uuidString
            message.authentication = try world.android(message.payload, .safetyNet(), salt: salt)
            let first = try await service.post("android/els", try message.buffer())
            #expect(first.status == .ok)
            message.payload.otp = UUID().uuidString
            message.authentication = try world.android(message.payload, .safetyNet(), salt: salt)
            let body = try message.buffer()
            #expect(try await service.post("android/els", body).status == .ok)
            let hash = SecretHash.sha256Hex(bytes: salt)
            try await service.database.client.query(
                "UPDATE salt SET created_at = now() - interval '3 hours' WHERE salt_hash = \(hash)"
            )
            message.payload.otp = UUID().uuidString
            message.authentication = try world.android(message.payload, .safetyNet(), salt: salt)
            try await self.expectRefused(
                service,
                "android/els",
                try message.buffer(),
                status: .forbidden,
                code: "SALT_REDEEMED"
            )
        }
    }

    @Test("one self-report per Android ID in 90 days; the ID is stored only under the pepper")
    func androidIDQuota() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            let id = Data("android-id-0001".utf8)
            let first = try await service.post(
                "android/srs",
                try world.androidSelfReport(androidID: id),
                headers: DonationService.real
            )
            #expect(first.status == .ok)
            #expect(try await service.count("android_id") == 1)
            #expect(try await service.count("android_id", where: "id_hash LIKE '%\(id.base64EncodedString())%'") == 0)
            try await self.expectRefused(
                service,
                "android/srs",
                try world.androidSelfReport(androidID: id, .playIntegrity()),
                headers: DonationService.real,
                status: .forbidden,
                code: "DEVICE_QUOTA_EXCEEDED"
            )
            try await self.expectRefused(
                service,
                "android/srs",
                try world.androidSelfReport(androidID: Data(repeating: 1, count: 7)),
                headers: DonationService.real,
                status: .badRequest,
                code: "ANDROID_ID_INVALID"
            )
        }
    }

    @Test("payload bounds: out-of-range sets and unknown enum values are refused, windows beyond 672 are dropped")
    func payloadBounds() async throws {
        let world = try DonationWorld()
        try await world.withService { service in
            var twoRisks = DonationWorld.analytics()
            twoRisks.exposureRiskMetadataSet.append(twoRisks.exposureRiskMetadataSet[0])
            try await self.expectRefused(
                service,
                "android/dat",
                try world.androidAnalytics(twoRisks),
                status: .badRequest,
                code: "METRICS_DATA_NOT_VALID"
            )
            var noScans = DonationWorld.analytics()
            noScans.newExposureWindows[0].exposureWindow.scanInstances = []
            try await self.expectRefused(
                service,
                "android/dat",
                try world.androidAnalytics(noScans),
                status: .badRequest,
                code: "METRICS_DATA_NOT_VALID"
            )
            var unknownRisk = DonationWorld.analytics()
            unknownRisk.exposureRiskMetadataSet[0].riskLevel = .UNRECOGNIZED(9)
            try await self.expectRefused(
                service,
                "android/dat",
                try world.androidAnalytics(unknownRisk),
                status: .badRequest,
                code: "METRICS_DATA_NOT_VALID"
            )
            let many = try await service.post(
                "android/dat",
                try world.androidAnalytics(DonationWorld.analytics(windows: 700))
            )
            #expect(many.status == .ok)
            #expect(try await service.count("exposure_window", where: "context = 'new'") == 672)
            try await self.expectRefused(
                service,
                "android/dat",
                ByteBuffer(string: "not protobuf at all \u{1}\u{2}"),
                status: .badRequest,
                code: "INVALID_REQUEST"
            )
        }
    }
}
