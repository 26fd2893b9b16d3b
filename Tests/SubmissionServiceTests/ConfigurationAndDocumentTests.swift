// Settings and the OpenAPI document.

import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import SubmissionService

@Suite("Configuration and document")
struct ConfigurationAndDocumentTests {
    @Test("defaults follow the reference")
    func defaults() throws {
        let configuration = try SubmissionConfiguration.load(
            from: SettingsReader(values: [
                "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/keys",
                "SERVICE_TOKEN_KEY_FILE": TestServiceKeys.privateKeyFile("submission-service"),
            ])
        )
        #expect(configuration.http.port == 8001)
        #expect(configuration.maxRequestBytes == 102_400)
        #expect(configuration.verificationURL == "http://127.0.0.1:8012")
        #expect(configuration.policy.maxKeys == 14)
        #expect(configuration.policy.supportedCountries.count == 30)
        #expect(configuration.policy.supportedCountries.isSuperset(of: ["DE", "FR", "NO", "IS", "LI"]))
        let configured = try SubmissionConfiguration.load(
            from: SettingsReader(values: [
                "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/keys", "SUPPORTED_COUNTRIES": "FR, NL",
                "SERVICE_TOKEN_KEY_FILE": TestServiceKeys.privateKeyFile("submission-service"),
            ])
        )
        #expect(configured.policy.supportedCountries == ["DE", "FR", "NL"])
        #expect(configuration.policy.keyPaddingMultiplier == 1)
        #expect(configuration.policy.checkIns.unencryptedEnabled == false)
        #expect(configuration.policy.checkIns.maxPerDay == 20)
        #expect(configuration.fakeDelay.samples == 10 && configuration.fakeDelay.initial == .milliseconds(10))
        #expect(configuration.dataDonationURL == "http://127.0.0.1:8017")
        #expect(configuration.dataDonationUpstream == UpstreamPolicy())
        #expect(configuration.policy.maxKeysPerDay == 1_000_000)
        #expect(configuration.policy.selfReportDays == 14)
    }

    @Test("country codes are the 249 of ISO 3166-1, in upper case")
    func countryCodes() {
        #expect(CountryCode.count == 249)
        #expect(CountryCode.isValid("DE") && CountryCode.isValid("CH") && CountryCode.isValid("IE"))
        #expect(
            !CountryCode.isValid("de") && !CountryCode.isValid("EU") && !CountryCode.isValid("XK")
                && !CountryCode.isValid("DEU")
        )
    }

    @Test("every bad value is reported at once")
    func badValues() {
        let settings = SettingsReader(values: [
            "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/keys",
            "MAX_NUMBER_OF_KEYS": "3",
            "ORIGIN_COUNTRY": "de",
            "SUPPORTED_COUNTRIES": "DE,XX1",
            "RANDOM_KEY_PADDING_MULTIPLIER": "26",
            "MAX_REQUEST_BYTES": "100",
            "VERIFICATION_INTERNAL_URL": "ftp://x",
            "DATA_DONATION_INTERNAL_URL": "ftp://x",
            "MAX_KEYS_PER_DAY": "0",
            "MAX_NUMBER_OF_DAYS_FOR_SRS": "91",
            "MIN_ROLLING_PERIOD": "100",
            "MAX_ROLLING_PERIOD": "50",
            "SERVICE_TOKEN_KEY_FILE": "/nonexistent/key.pem",
        ])
        #expect(throws: ConfigurationError.self) { try SubmissionConfiguration.load(from: settings) }
        let named = Set(settings.problems.compactMap { $0.split(separator: " ").first.map(String.init) })
        #expect(
            named == [
                "MAX_NUMBER_OF_KEYS", "ORIGIN_COUNTRY", "SUPPORTED_COUNTRIES", "RANDOM_KEY_PADDING_MULTIPLIER",
                "MAX_REQUEST_BYTES",
                "VERIFICATION_INTERNAL_URL", "MIN_ROLLING_PERIOD", "SERVICE_TOKEN_KEY_FILE",
                "DATA_DONATION_INTERNAL_URL",
                "MAX_KEYS_PER_DAY", "MAX_NUMBER_OF_DAYS_FOR_SRS",
            ]
        )
    }

    @Test("every documented operation is routed, and every route of ours is documented")
    func document() async throws {
        let url =
            Bundle.module.url(forResource: "openapi", withExtension: "yaml")
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Services/Submission/openapi.yaml")
        let documented = try OpenAPIDocument.operations(in: url).map { "\($0.method) \($0.path)" }.sorted()
        #expect(
            documented == [
                "GET /health/live", "GET /health/ready", "GET /metrics", "GET /openapi.yaml",
                "GET /submission/empty-submission-v2", "POST /submission/diagnosis-keys",
                "POST /submission/empty-submission", "POST /version/v1/diagnosis-keys",
                "POST /version/v1/submission-on-behalf",
            ]
        )
        let harness = try SubmissionRouterHarness(TestNHS.settings())
        try Submission.buildRouter(harness.runtime).expectMounts(exactly: Set(documented))
        for operation in documented {
            let parts = operation.split(separator: " ")
            let status = try await harness.app.test(.router) { client in
                try await client.execute(uri: String(parts[1]), method: HTTPRequest.Method(rawValue: String(parts[0]))!)
                    .status
            }
            #expect(status != .notFound && status != .methodNotAllowed, "\(operation)")
        }
        let served = try await harness.app.test(.router) { client in
            try await client.execute(uri: "/openapi.yaml", method: .get).body.text
        }
        #expect(served.contains("/version/v1/diagnosis-keys"))
    }
}
