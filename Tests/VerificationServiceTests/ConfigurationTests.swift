// Settings: defaults, keys from files or inline, every problem reported at once.

import ENCrypto
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
        #expect(configuration.listeners.internalHTTP.host == "127.0.0.1")
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

    @Test(
        "TELETAN_PEPPER_FILE: missing, unreadable, short keys or a repeated id stop the service with the setting named",
        arguments: [
            (nil, "is required"),
            ("/nonexistent/pepper.keys", "/nonexistent/pepper.keys cannot be read"),
            ("k=base64:\(Data(repeating: 1, count: 16).base64EncodedString())", "line 1: the key has 16 bytes"),
            (
                "k=base64:\(Data(repeating: 1, count: 32).base64EncodedString())\nk=hex:\(String(repeating: "ab", count: 32))",
                "line 2 repeats the key id 'k'"
            ),
        ] as [(String?, String)]
    )
    func pepperFileProblems(file: String?, reason: String) throws {
        var settings = TestSettings.verification()
        settings["TELETAN_PEPPER_FILE"] = try file.map { $0.hasPrefix("/") ? $0 : try TestKeyFiles.write($0) }

        #expect {
            _ = try VerificationConfiguration.load(from: SettingsReader(values: settings))
        } throws: { error in
            let text = "\(error)"
            return text.contains("TELETAN_PEPPER_FILE") && text.contains(reason)
        }
    }

    @Test("TELETAN_PEPPER_FILE: keys of 32 to 128 bytes, in the file's order")
    func pepperFile() throws {
        let file = try TestKeyFiles.write(
            "new=base64:\(Data(repeating: 1, count: 128).base64EncodedString())\nold=base64:\(Data(repeating: 2, count: 32).base64EncodedString())\n"
        )

        let configuration = try VerificationFixture.configuration(["TELETAN_PEPPER_FILE": file])

        #expect(configuration.teleTANPepper.entries.map(\.id) == ["new", "old"])
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
                "TELETAN_JWT_PUBLIC_KEYS", "TELETAN_PEPPER_FILE",
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
