// The app API: analytics and OTP creation for Android and iOS (cwa-satellites §4.1), with fake self-reports.

import ENAttestation
import ENModels
import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SwiftProtobuf

/// Routes under `/version/v1/{android|ios}/{dat|otp|els|srs}`. Bodies are protobuf; answers are
/// `{"expirationDate": "<ISO 8601, UTC>"}` or `{"errorCode": "<code>"}`.
///
/// A self-report request with `cwa-fake` other than `0` is a dummy: its body is read like a real one, nothing is
/// parsed or stored, and after a delay replayed from recent real self-reports of its platform it gets the answer of a
/// real success: the same status, headers and body length (an expiry half an hour from now).
struct AppController: Sendable {
    static let fakeHeader = HTTPField.Name("cwa-fake")!

    let engine: DonationEngine
    let delays: [Platform: FakeDelay]
    let metrics: DataDonationMetrics
    /// How a fake request waits (an event-loop timer; tests record the durations instead).
    var sleep: @Sendable (Duration) async throws -> Void = FakeDelay.eventLoopSleep

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.post("android/dat") { request, context in
            try await self.handle(.android, .analytics, request, context) { body in
                let message = try PPADataRequestAndroid(serializedBytes: body)
                guard let donation = AnalyticsDonation.android(message.payload, day: self.engine.clock.now) else {
                    throw DonationFailure.metricsDataNotValid
                }
                return try await self.engine.android(
                    message.authentication,
                    payload: try message.payload.serializedBytes(),
                    content: .analytics(donation)
                )
            }
        }
        group.post("ios/dat") { request, context in
            try await self.handle(.ios, .analytics, request, context) { body in
                let message = try PPADataRequestIOS(serializedBytes: body)
                guard let donation = AnalyticsDonation.ios(message.payload, day: self.engine.clock.now) else {
                    throw DonationFailure.metricsDataNotValid
                }
                return try await self.engine.ios(message.authentication, content: .analytics(donation))
            }
        }
        group.post("android/otp") { request, context in
            try await self.handle(.android, .survey, request, context) { body in
                let message = try EDUSOneTimePasswordRequestAndroid(serializedBytes: body)
                return try await self.engine.android(
                    message.authentication,
                    payload: try message.payload.serializedBytes(),
                    content: .otp(try Self.otp(message.payload.otp), .survey)
                )
            }
        }
        group.post("ios/otp") { request, context in
            try await self.handle(.ios, .survey, request, context) { body in
                let message = try EDUSOneTimePasswordRequestIOS(serializedBytes: body)
                return try await self.engine.ios(
                    message.authentication,
                    content: .otp(try Self.otp(message.payload.otp), .survey)
                )
            }
        }
        group.post("android/els") { request, context in
            try await self.handle(.android, .errorLog, request, context) { body in
                let message = try ELSOneTimePasswordRequestAndroid(serializedBytes: body)
                return try await self.engine.android(
                    message.authentication,
                    payload: try message.payload.serializedBytes(),
                    content: .otp(try Self.otp(message.payload.otp), .errorLog)
                )
            }
        }
        // The reference runs no device check for iOS error-log OTPs (§4.3); here they are attested like the others.
        group.post("ios/els") { request, context in
            try await self.handle(.ios, .errorLog, request, context) { body in
                let message = try ELSOneTimePasswordRequestIOS(serializedBytes: body)
                return try await self.engine.ios(
                    message.authentication,
                    content: .otp(try Self.otp(message.payload.otp), .errorLog)
                )
            }
        }
        group.post("android/srs") { request, context in
            try await self.selfReport(.android, request, context) { body in
                let message = try SRSOneTimePasswordRequestAndroid(serializedBytes: body)
                return try await self.engine.android(
                    message.authentication,
                    payload: try message.payload.serializedBytes(),
                    androidID: message.payload.androidID,
                    content: .otp(try Self.otp(message.payload.otp), .selfReport)
                )
            }
        }
        group.post("ios/srs") { request, context in
            try await self.selfReport(.ios, request, context) { body in
                let message = try SRSOneTimePasswordRequestIOS(serializedBytes: body)
                return try await self.engine.ios(
                    message.authentication,
                    content: .otp(try Self.otp(message.payload.otp), .selfReport)
                )
            }
        }
    }

    /// An OTP in a creation request: a version 3 or 4 UUID, as redemption requires (§4.1). The reference stores any
    /// UUID here, though its redemption services refuse all but these; an OTP that could never be redeemed is
    /// refused at once instead.
    private static func otp(_ text: String) throws(DonationFailure) -> OTP {
        guard let otp = OTP(text, strict: true) else { throw .invalidRequest }
        return otp
    }

    /// Reads the body, runs `body` on it, answers with the expiry; a refusal is counted with its reason.
    private func handle(
        _ platform: Platform,
        _ scenario: AttestationScenario,
        _ request: Request,
        _ context: ServiceRequestContext,
        _ body: ([UInt8]) async throws -> Date
    ) async throws -> Response {
        do {
            guard request.mediaType == "application/x-protobuf" else { throw DonationFailure.unsupportedContentType }
            let bytes = try await request.body.collect(upTo: context.maxUploadSize)
            let expires: Date
            do {
                expires = try await body(Array(bytes.readableBytesView))
            } catch let failure as DonationFailure {
                throw failure
            } catch {
                // Only decoding the body (and re-encoding its payload for the nonce) throws anything else.
                throw DonationFailure.invalidRequest
            }
            self.metrics.recordAccepted(platform: platform, scenario: scenario)
            return Self.expiry(expires)
        } catch let failure as DonationFailure {
            self.metrics.recordRefused(platform: platform, scenario: scenario, reason: failure.reason)
            throw failure
        }
    }

    /// §4.1: only `cwa-fake: 0` is real; any other integer is a dummy; no header (or not an integer) is a 400.
    private func selfReport(
        _ platform: Platform,
        _ request: Request,
        _ context: ServiceRequestContext,
        _ body: ([UInt8]) async throws -> Date
    ) async throws -> Response {
        let started = context.receivedAt
        guard let header = request.headers[Self.fakeHeader], let fake = Int(header.trimmingCharacters(in: .whitespaces))
        else {
            self.metrics.recordRefused(platform: platform, scenario: .selfReport, reason: "fake_header_missing")
            throw DonationFailure.fakeHeaderMissing
        }
        guard fake == 0 else {
            guard request.mediaType == "application/x-protobuf" else {
                self.metrics.recordRefused(
                    platform: platform,
                    scenario: .selfReport,
                    reason: "unsupported_content_type"
                )
                throw DonationFailure.unsupportedContentType
            }
            _ = try await request.body.collect(upTo: context.maxUploadSize)
            self.metrics.recordFake(platform: platform)
            if let delay = self.delays[platform] {
                var generator = SystemRandomNumberGenerator()
                try? await delay.wait(for: delay.delay(using: &generator), since: started, sleep: self.sleep)
            }
            return Self.expiry(self.engine.clock.now.addingTimeInterval(self.engine.lifetimes.selfReport))
        }
        let response = try await self.handle(platform, .selfReport, request, context, body)
        self.delays[platform]?.record(ContinuousClock.now - started)
        return response
    }

    /// 200 `{"expirationDate":"yyyy-MM-ddTHH:mm:ssZ"}`: always the same length.
    static func expiry(_ date: Date) -> Response {
        let body = ["expirationDate": date.formatted(Date.ISO8601FormatStyle())]
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            // A dictionary of strings always encodes.
            body: .init(byteBuffer: ByteBuffer(bytes: (try? JSONEncoder().encode(body)) ?? Data()))
        )
    }
}
