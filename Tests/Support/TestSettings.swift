// The settings tests build service configurations from: valid, with ports the kernel picks and no real database.

import Foundation

/// Settings as a service reads them from its environment. Configurations built from these never reach a database
/// unless a test points `DATABASE_URL` at its own.
package enum TestSettings {
    /// A database URL nothing listens on.
    package static let placeholderDatabase = "postgres://test:secret@127.0.0.1:1/test"

    /// test-result-service.
    package static func testResult(_ overrides: [String: String] = [:]) -> [String: String] {
        [
            "DATABASE_URL": Self.placeholderDatabase, "HTTP_PORT": "0",
            "METRICS_PORT": "0", "INTERNAL_HTTP_PORT": "0",
            "SERVICE_CALLER_KEYS": TestServiceKeys.callerKeys(TestServiceKeys.testResultCallers),
        ]
        .merging(overrides) { _, new in new }
    }

    /// verification-service, trusting the test signing keys for teleTAN tokens, with the standard test pepper, fast
    /// retries and fake delays, and test-result timeouts a loaded machine does not reach.
    package static func verification(_ overrides: [String: String] = [:]) -> [String: String] {
        [
            "DATABASE_URL": Self.placeholderDatabase,
            "HTTP_PORT": "0",
            "METRICS_PORT": "0",
            "INTERNAL_HTTP_PORT": "0",
            "TELETAN_JWT_PUBLIC_KEYS": TestSigningKeys.shared.publicPEM,
            "TELETAN_PEPPER_FILE": TestKeyFiles.standard,
            "SERVICE_TOKEN_KEY_FILE": TestServiceKeys.privateKeyFile("verification-service"),
            "SERVICE_CALLER_KEYS": TestServiceKeys.callerKeys(TestServiceKeys.verificationCallers),
            "TEST_RESULT_RETRY_BACKOFF": "1ms",
            // A loaded test machine can take seconds to answer; the tests measure outcomes, not speed.
            "TEST_RESULT_READ_TIMEOUT": "60s",
            "TEST_RESULT_CONNECT_TIMEOUT": "60s",
            "FAKE_DELAY_INITIAL": "1ms",
        ].merging(overrides) { _, new in new }
    }

    /// submission-service, with fast retries and fake delays and the countries the payload builders use.
    package static func submission(_ overrides: [String: String] = [:]) -> [String: String] {
        [
            "DATABASE_URL": Self.placeholderDatabase,
            "HTTP_PORT": "0",
            "METRICS_PORT": "0",
            "VERIFICATION_RETRY_BACKOFF": "1ms",
            // A loaded test machine can take seconds to answer parallel TAN checks; the tests measure outcomes, not speed.
            "VERIFICATION_READ_TIMEOUT": "60s",
            "VERIFICATION_CONNECT_TIMEOUT": "60s",
            "FAKE_DELAY_INITIAL": "1ms",
            "SUPPORTED_COUNTRIES": "DE,FR,IT,NL",
            "SERVICE_TOKEN_KEY_FILE": TestServiceKeys.privateKeyFile("submission-service"),
        ].merging(overrides) { _, new in new }
    }
}

/// JSON bodies of verification-service's APIs.
package enum VerificationBodies {
    package static func registration(guid: String, dob: String? = nil) -> String {
        if let dob { return #"{"key":"\#(guid)","keyType":"GUID","keyDob":"\#(dob)"}"# }
        return #"{"key":"\#(guid)","keyType":"GUID"}"#
    }

    package static func teleTANRegistration(_ teleTAN: String) -> String {
        #"{"key":"\#(teleTAN)","keyType":"TELETAN"}"#
    }

    package static func token(_ token: String) -> String { #"{"registrationToken":"\#(token)"}"# }
    package static func tan(_ tan: String) -> String { #"{"tan":"\#(tan)"}"# }
}
