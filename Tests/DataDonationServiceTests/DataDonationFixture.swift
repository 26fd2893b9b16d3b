// Building data-donation-service for tests: keys and chains of the test's own, configurations, requests.

import Crypto
import ENAttestation
import ENCrypto
import ENModels
import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import SwiftASN1
import SwiftProtobuf
import Testing

@testable import DataDonationService

/// One test's attestation world: a SafetyNet chain, an app's Play Integrity keys, a DeviceCheck server.
struct DonationWorld: Sendable {
    let safetyNet: AttestationFixture
    let play = PlayIntegrityKeys()
    let deviceCheck = TestDeviceCheckServer()
    let rootsFile: String

    init() throws {
        self.safetyNet = try AttestationFixture()
        self.rootsFile = Self.write(try self.safetyNet.root.certificate.serializeAsPEM().pemString, suffix: ".pem")
    }

    /// Valid settings accepting both Android verdicts and asking the DeviceCheck server at `deviceCheckURL`.
    func settings(
        deviceCheckURL: String = "http://127.0.0.1:1/v1",
        _ overrides: [String: String] = [:]
    )
        -> [String: String]
    {
        [
            "DATABASE_URL": TestSettings.placeholderDatabase,
            "HTTP_PORT": "0",
            "INTERNAL_HTTP_PORT": "0",
            "METRICS_PORT": "0",
            "SERVICE_CALLER_KEYS": TestServiceKeys.callerKeys([
                "submission-service", "survey-service", "error-log-service",
            ]),
            "ANDROID_ATTESTATION": "both",
            "ATTESTATION_TRUST_ROOTS": self.rootsFile,
            "PLAY_INTEGRITY_DECRYPTION_KEY": self.play.decryption.withUnsafeBytes { Data($0) }.base64EncodedString(),
            "PLAY_INTEGRITY_VERIFICATION_KEY": self.play.signing.publicKey.derRepresentation.base64EncodedString(),
            "ANDROID_CERTIFICATE_DIGESTS": AttestationFixture.digest.base64EncodedString(),
            "ANDROID_ID_PEPPER_FILE": TestKeyFiles.standard,
            "DEVICE_CHECK_URL": deviceCheckURL,
            "DEVICE_CHECK_TEAM_ID": self.deviceCheck.teamID,
            "DEVICE_CHECK_KEY_ID": self.deviceCheck.keyID,
            "DEVICE_CHECK_KEY_FILE": Self.write(self.deviceCheck.key.pemRepresentation, suffix: ".p8"),
            "FAKE_DELAY_INITIAL": "1ms",
        ].merging(overrides) { _, new in new }
    }

    func configuration(
        deviceCheckURL: String = "http://127.0.0.1:1/v1",
        _ overrides: [String: String] = [:]
    ) throws -> DataDonationConfiguration {
        try DataDonationConfiguration.load(
            from: SettingsReader(values: self.settings(deviceCheckURL: deviceCheckURL, overrides))
        )
    }

    /// Both routers over the test's database, asking the DeviceCheck server at `deviceCheckURL`; `body` gets them,
    /// and the DeviceCheck client is shut down afterwards.
    func withService(
        deviceCheckURL: String = "http://127.0.0.1:1/v1",
        clock: WallClock = .system,
        deviceCheckTimeout: Duration = .seconds(30),
        _ overrides: [String: String] = [:],
        _ body: (DonationService) async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let configuration = try self.configuration(deviceCheckURL: deviceCheckURL, overrides)
        let deviceCheck = HTTPDeviceCheck(
            baseURL: configuration.deviceCheckURL,
            credentials: configuration.deviceCheckCredentials,
            timeout: deviceCheckTimeout
        )
        var dependencies = DataDonationDependencies.postgres(
            client: database.client,
            deviceCheck: deviceCheck,
            logger: database.logger,
            clock: clock
        )
        // The NHS API keys of the tests (the app's `mobile` key), in memory.
        dependencies.apiKeys = NHSAPIKeyVerifier(store: TestNHS.keyStore())
        let runtime = DataDonationRuntime(
            configuration: configuration,
            dependencies: dependencies,
            environment: .testing()
        )
        do {
            let service = DonationService(
                runtime: runtime,
                app: Application(router: try DataDonation.buildPublicRouter(runtime)),
                internalApp: Application(router: try DataDonation.buildInternalRouter(runtime)),
                database: database
            )
            try await body(service)
        } catch {
            try? await deviceCheck.shutdown()
            throw error
        }
        try await deviceCheck.shutdown()
    }

    // MARK: - Android requests

    enum Verdict {
        /// A SafetyNet JWS; `claims` edits the claims of a genuine, strong device.
        case safetyNet((inout [String: Any]) -> Void = { _ in })
        /// A Play Integrity token; `verdict` edits the verdict of a recognised app on a strong device.
        case playIntegrity((inout [String: Any]) -> Void = { _ in })
    }

    /// `PPACAndroid` attesting `payload` under a fresh salt (or `salt`), as the app makes one per request.
    func android(_ payload: some SwiftProtobuf.Message, _ verdict: Verdict, salt: Data? = nil) throws -> PPACAndroid {
        var fixture = self.safetyNet
        fixture.payload = try payload.serializedBytes()
        fixture.salt = salt ?? Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        var authentication = PPACAndroid()
        authentication.salt = fixture.salt.base64EncodedString()
        switch verdict {
        case .safetyNet(let edit):
            var claims = fixture.safetyNetClaims()
            edit(&claims)
            authentication.safetyNetJws = try fixture.safetyNetJWS(claims)
        case .playIntegrity(let edit):
            var claims = PlayIntegrityKeys.verdict(fixture)
            edit(&claims)
            authentication.safetyNetJws = try self.play.token(claims)
        }
        return authentication
    }

    /// An Android self-report OTP request.
    func androidSelfReport(
        otp: String = UUID().uuidString,
        androidID: Data = Data((0..<8).map { _ in UInt8.random(in: 0...255) }),
        _ verdict: Verdict = .safetyNet(),
        salt: Data? = nil
    ) throws -> ByteBuffer {
        var message = SRSOneTimePasswordRequestAndroid()
        message.payload.otp = otp
        message.payload.androidID = androidID
        message.authentication = try self.android(message.payload, verdict, salt: salt)
        return try message.buffer()
    }

    /// An Android error-log OTP request.
    func androidErrorLog(otp: String = UUID().uuidString, _ verdict: Verdict = .safetyNet()) throws -> ByteBuffer {
        var message = ELSOneTimePasswordRequestAndroid()
        message.payload.otp = otp
        message.authentication = try self.android(message.payload, verdict)
        return try message.buffer()
    }

    /// An Android analytics donation of `data`.
    func androidAnalytics(_ data: PPADataAndroid, _ verdict: Verdict = .safetyNet()) throws -> ByteBuffer {
        var message = PPADataRequestAndroid()
        message.payload = data
        message.authentication = try self.android(message.payload, verdict)
        return try message.buffer()
    }

    // MARK: - iOS requests

    /// A device token of DeviceCheck's length (2668 Base64 characters).
    static func deviceToken() -> String {
        Data((0..<2000).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    }

    static func ios(deviceToken: String, apiToken: String) -> PPACIOS {
        var authentication = PPACIOS()
        authentication.deviceToken = deviceToken
        authentication.apiToken = apiToken
        return authentication
    }

    static func iosAnalytics(_ data: PPADataIOS, deviceToken: String, apiToken: String) throws -> ByteBuffer {
        var message = PPADataRequestIOS()
        message.payload = data
        message.authentication = Self.ios(deviceToken: deviceToken, apiToken: apiToken)
        return try message.buffer()
    }

    static func iosSelfReport(otp: String, deviceToken: String, apiToken: String) throws -> ByteBuffer {
        var message = SRSOneTimePasswordRequestIOS()
        message.payload.otp = otp
        message.authentication = Self.ios(deviceToken: deviceToken, apiToken: apiToken)
        return try message.buffer()
    }

    // MARK: - Payloads

    /// A small, valid analytics payload: one risk metadata, `windows` exposure windows, one test result, one key
    /// submission, user and client metadata.
    static func analytics(windows: Int = 2) -> PPADataAndroid {
        var data = PPADataAndroid()
        var risk = PPAExposureRiskMetadata()
        risk.riskLevel = .riskLevelHigh
        risk.mostRecentDateAtRiskLevel = 1_764_000_000
        data.exposureRiskMetadataSet = [risk]
        data.newExposureWindows = (0..<windows).map { _ in Self.window() }
        var result = PPATestResultMetadata()
        result.testResult = .testResultPositive
        result.hoursSinceTestRegistration = 20
        result.exposureWindowsAtTestRegistration = [Self.window()]
        data.testResultMetadataSet = [result]
        var submission = PPAKeySubmissionMetadata()
        submission.submitted = true
        submission.submissionType = .submissionTypeSrsSelfTest
        data.keySubmissionMetadataSet = [submission]
        data.userMetadata.federalState = .federalStateBe
        data.userMetadata.ageGroup = .ageGroup30To59
        data.clientMetadata.cwaVersion.major = 3
        data.clientMetadata.androidApiLevel = 34
        data.clientMetadata.appConfigEtag = "etag"
        return data
    }

    static func window() -> PPANewExposureWindow {
        var window = PPANewExposureWindow()
        window.transmissionRiskLevel = 4
        window.normalizedTime = 0.5
        window.exposureWindow.date = 1_764_000_000
        window.exposureWindow.reportType = .reportTypeConfirmedTest
        window.exposureWindow.infectiousness = .infectiousnessHigh
        var scan = App_Coronawarn_Datadonation_Common_Protocols_Internal_Ppdd_PPAExposureWindowScanInstance()
        scan.typicalAttenuation = 60
        scan.minAttenuation = 55
        scan.secondsSinceLastScan = 300
        window.exposureWindow.scanInstances = [scan, scan]
        return window
    }

    static func write(_ text: String, suffix: String) -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "datadonation-\(UUID().uuidString)\(suffix)"
        ).path
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }
}

/// The routers of one service over a test database.
struct DonationService: Sendable {
    let runtime: DataDonationRuntime
    let app: ServiceApplication<ServiceRequestContext>
    let internalApp: ServiceApplication<ServiceRequestContext>
    let database: PostgresTestDatabase

    static let protobuf: HTTPFields = [.contentType: "application/x-protobuf"]
    static let real: HTTPFields = [.contentType: "application/x-protobuf", HTTPField.Name("cwa-fake")!: "0"]

    func post(_ uri: String, _ body: ByteBuffer, headers: HTTPFields = Self.protobuf) async throws -> RouterReply {
        try await self.app.post("/version/v1/\(uri)", headers: headers, body: body)
    }

    /// The internal redemption call of `caller` (submission-service for `srs`).
    func redeem(
        _ kind: String,
        _ otp: String,
        caller: String? = nil,
        submission: String? = nil
    ) async throws -> RouterReply {
        let owner = caller ?? ["srs": "submission-service", "otp": "survey-service", "els": "error-log-service"][kind]!
        let body = submission.map { #"{"otp":"\#(otp)","submission":"\#($0)"}"# } ?? #"{"otp":"\#(otp)"}"#
        return try await self.internalPost("/version/v1/\(kind)", body, caller: owner)
    }

    /// POST `body` to the internal port as `caller`.
    func internalPost(_ path: String, _ body: String, caller: String = "submission-service") async throws -> RouterReply
    {
        var headers = TestServiceKeys.header(caller, for: "data-donation-service")
        headers[.contentType] = "application/json"
        return try await self.internalApp.post(path, headers: headers, body: ByteBuffer(string: body))
    }

    func count(_ table: String, where condition: String = "true") async throws -> Int {
        try await self.database.count(table, where: condition)
    }

    /// Rows of every table a request may write: what "stores nothing" compares.
    func stored() async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for table in [
            "salt", "android_id", "api_token", "device_token", "one_time_password", "exposure_risk_metadata",
            "test_result_metadata", "key_submission_metadata", "exposure_window", "client_metadata",
        ] {
            counts[table] = try await self.count(table)
        }
        return counts
    }
}

extension RouterReply {
    var errorCode: String? { try? self.string("errorCode") }
}

extension SwiftProtobuf.Message {
    /// The message's protobuf bytes as a request body.
    func buffer() throws -> ByteBuffer {
        let bytes: [UInt8] = try self.serializedBytes()
        return ByteBuffer(bytes: bytes)
    }
}
