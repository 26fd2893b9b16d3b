// Configuration rules of test-result-service.

import ENCrypto
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import Testing

@testable import TestResultService

@Suite("Test-result configuration")
struct TestResultConfigurationTests {
    @Test("defaults: ports 8003/8013 on loopback, 1 MiB bodies, 21/60 days, hourly retention")
    func defaults() throws {
        let configuration = try TestResultConfiguration.load(
            from: SettingsReader(values: [
                "DATABASE_URL": "postgres://u:p@db:5432/testresult",
                "SERVICE_CALLER_KEYS": TestServiceKeys.callerKeys(TestServiceKeys.testResultCallers),
            ])
        )

        #expect(configuration.http == ListenAddress(host: "127.0.0.1", port: 8003))
        #expect(configuration.listeners.internalHTTP == ListenAddress(host: "127.0.0.1", port: 8013))
        #expect(configuration.maxBodyBytes == 1_048_576)
        #expect(
            configuration.retention
                == RetentionPolicy(
                    maskAfter: .seconds(21 * 86400),
                    deleteAfter: .seconds(60 * 86400),
                    interval: .seconds(3600)
                )
        )
        #expect(configuration.tls == nil)
        #expect(configuration.database.database == "testresult")
    }

    @Test("without TLS the lab port must stay on loopback")
    func plainHTTPOnlyOnLoopback() {
        #expect(throws: ConfigurationError.self) {
            try TestResultFixture.configuration(["HTTP_HOST": "0.0.0.0"])
        }
        #expect(throws: Never.self) {
            try TestResultFixture.configuration(["HTTP_HOST": "127.0.0.1", "INTERNAL_HTTP_HOST": "0.0.0.0"])
        }
    }

    @Test("TLS needs the client CA and a non-empty allowlist; thumbprints are checked")
    func tlsRequirements() throws {
        let pki = try TestPKI.make()
        defer { pki.remove() }
        let tls = ["TLS_CERT_FILE": pki.serverCertificateFile.path, "TLS_KEY_FILE": pki.serverKeyFile.path]

        let noCA = self.problems(tls.merging(["LAB_CERT_SHA256_ALLOWLIST": String(repeating: "ab", count: 32)]) { $1 })
        let noAllowlist = self.problems(tls.merging(["TLS_CLIENT_CA_FILE": pki.caCertificateFile.path]) { $1 })
        let badThumbprint = self.problems(
            tls.merging(["TLS_CLIENT_CA_FILE": pki.caCertificateFile.path, "LAB_CERT_SHA256_ALLOWLIST": "abc"]) { $1 }
        )
        let missingFile = self.problems(["TLS_CERT_FILE": "/nonexistent.pem", "TLS_KEY_FILE": pki.serverKeyFile.path])
        let colonForm = try TestResultFixture.configuration(
            tls.merging([
                "TLS_CLIENT_CA_FILE": pki.caCertificateFile.path,
                "LAB_CERT_SHA256_ALLOWLIST": (0..<32).map { _ in "AB" }.joined(separator: ":"),
            ]) { $1 }
        )

        #expect(noCA.contains { $0.hasPrefix("TLS_CLIENT_CA_FILE") })
        #expect(noAllowlist.contains { $0.hasPrefix("LAB_CERT_SHA256_ALLOWLIST") })
        #expect(badThumbprint.contains { $0.contains("not [lab id=]thumbprint") })
        #expect(missingFile.contains { $0.hasPrefix("TLS_CERT_FILE") && $0.contains("does not exist") })
        #expect(colonForm.labCertificateAllowlist.thumbprints.map(\.hex) == [String(repeating: "ab", count: 32)])
    }

    @Test("every problem is reported at once, each naming its setting")
    func allProblemsAtOnce() {
        let bad = [
            "DATABASE_URL": "", "HTTP_PORT": "99999", "RESULT_MASK_AFTER": "forever", "LAB_MAX_RESULTS_PER_UPLOAD": "0",
        ]

        let problems = self.problems(bad)

        #expect(problems.count == bad.count, "\(problems)")
        for setting in bad.keys.sorted() {
            #expect(problems.contains { $0.hasPrefix(setting) }, "\(setting) is not named in \(problems)")
        }
    }

    private func problems(_ values: [String: String]) -> [String] {
        var all = [
            "HTTP_PORT": "0", "INTERNAL_HTTP_PORT": "0", "METRICS_PORT": "0", "DATABASE_URL": "postgres://u:p@h/d",
            "SERVICE_CALLER_KEYS": TestServiceKeys.callerKeys(TestServiceKeys.testResultCallers),
        ]
        all.merge(values) { $1 }
        do {
            _ = try TestResultConfiguration.load(from: SettingsReader(values: all))
            return []
        } catch {
            return error.problems
        }
    }
}
