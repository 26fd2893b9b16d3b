// Settings: defaults, keys from files or inline, every problem reported at once.

import ENServiceKit
import ENTestSupport
import Foundation
import Testing

@testable import VerificationService

@Suite("Configuration")
struct ConfigurationTests {
    @Test("defaults are the reference's values")
    func defaults() throws {
        let configuration = try VerificationFixture.configuration()
        let policy = configuration.policy

        #expect(configuration.http.host == "127.0.0.1")
        #expect(configuration.internalHTTP.host == "127.0.0.1")
        #expect(configuration.maxBodyBytes == 10_000)
        #expect(configuration.testResultURL == "http://127.0.0.1:8013")
        #expect(policy.tansPerRegistrationToken == 1)
        #expect(policy.tanValidity == .seconds(14 * 86400))
        #expect(policy.teleTANTestValidity == .seconds(3600))
        #expect(policy.teleTANEventValidity == .seconds(2 * 86400))
        #expect(policy.teleTANRateLimit == 1000)
        #expect(configuration.retention.maxAge == .seconds(21 * 86400))
        #expect(configuration.jwtKeys.entries.map(\.key.algorithm) == ["ES256", "RS256"])
    }

    @Test("keys are read from a file as well as inline")
    func keysFromFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString).pem")
        try TestSigningKeys.shared.publicPEM.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }

        let configuration = try VerificationFixture.configuration(["TELETAN_JWT_PUBLIC_KEYS": file.path])
        #expect(configuration.jwtKeys.entries.count == 2)
    }

    @Test("bad values are all reported, and missing keys too")
    func problems() {
        let settings = SettingsReader(values: [
            "DATABASE_URL": "postgres://u:p@127.0.0.1:1/db",
            "TEST_RESULT_INTERNAL_URL": "ftp://somewhere",
            "TAN_PER_REGISTRATION_TOKEN": "0",
            "TELETAN_RATE_LIMIT": "many",
            "HTTP_PORT": "8002",
            "INTERNAL_HTTP_PORT": "8002",
        ])
        #expect {
            _ = try VerificationConfiguration.load(from: settings)
        } throws: { error in
            let text = "\(error)"
            return [
                "TEST_RESULT_INTERNAL_URL", "TAN_PER_REGISTRATION_TOKEN", "TELETAN_RATE_LIMIT", "INTERNAL_HTTP_PORT",
                "TELETAN_JWT_PUBLIC_KEYS",
            ]
            .allSatisfy(text.contains)
        }
    }

    @Test("unreadable key material is reported without quoting it")
    func badKeys() {
        for keys in [
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", #"{"keys":[]}"#, "/nonexistent/keys.pem",
            "{broken",
        ] {
            #expect(throws: ConfigurationError.self) {
                _ = try VerificationFixture.configuration(["TELETAN_JWT_PUBLIC_KEYS": keys])
            }
        }
    }
}
