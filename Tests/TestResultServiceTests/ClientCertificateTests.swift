// The lab-certificate allowlist over real TLS on loopback.

import ENCrypto
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@testable import TestResultService

@Suite("Lab client certificates (TLS on loopback)")
struct ClientCertificateTests {
    @Test("an allowlisted certificate uploads; an unknown certificate and no certificate get 401; health needs none")
    func allowlist() async throws {
        let pki = try TestPKI.make()
        defer { pki.remove() }
        let allowed = try pki.issueClient(commonName: "lab-allowed")
        let unknown = try pki.issueClient(commonName: "lab-unknown")
        let repository = InMemoryTestResultRepository()
        let app = try self.tlsApp(pki: pki, allowlist: [allowed.thumbprint], repository: repository)
        let body = String(buffer: TestResultFixture.batch([(TestIDs.hashedGUID(), 2, nil)]))

        try await LiveServer.run(app) { port in
            let withAllowed = try await self.post(
                port: port,
                pki: pki,
                client: allowed,
                path: "/api/v1/lab/results",
                body: body
            )
            let withUnknown = try await self.post(
                port: port,
                pki: pki,
                client: unknown,
                path: "/api/v1/lab/results",
                body: body
            )
            let withNone = try await self.post(
                port: port,
                pki: pki,
                client: nil,
                path: "/api/v1/lab/results",
                body: body
            )
            let lookupWithNone = try await self.post(
                port: port,
                pki: pki,
                client: nil,
                path: "/api/v1/quicktest/result",
                body: #"{"id":"\#(TestIDs.hashedGUID())"}"#
            )
            let health = try await self.get(port: port, pki: pki, path: "/health/live")

            #expect(withAllowed.status == 204)
            #expect(withUnknown.status == 401)
            #expect(withUnknown.body.contains("not allowed"))
            #expect(withNone.status == 401)
            #expect(withNone.body.contains("client certificate is required"))
            #expect(lookupWithNone.status == 401)
            #expect(health.status == 200)
        }
        #expect(await repository.count == 1)
    }

    @Test("a certificate from another CA is refused during the handshake")
    func foreignCertificateAuthority() async throws {
        let pki = try TestPKI.make()
        let foreign = try TestPKI.make(name: "Foreign CA")
        defer {
            pki.remove()
            foreign.remove()
        }
        let stranger = try foreign.issueClient(commonName: "stranger")
        let repository = InMemoryTestResultRepository()
        let app = try self.tlsApp(pki: pki, allowlist: [stranger.thumbprint], repository: repository)

        try await LiveServer.run(app) { port in
            await #expect(throws: (any Error).self) {
                // A valid batch: had the handshake succeeded, it would have been stored.
                let batch = TestResultFixture.batch([(TestIDs.hashedGUID(), 2, nil)]).text
                _ = try await self.post(
                    port: port,
                    pki: pki,
                    client: stranger,
                    path: "/api/v1/lab/results",
                    body: batch
                )
            }
        }
        #expect(await repository.count == 0)
    }

    // MARK: - Helpers

    private func tlsApp(
        pki: TestPKI,
        allowlist: [String],
        repository: InMemoryTestResultRepository
    ) throws -> ServiceApplication<CertificateRequestContext> {
        let configuration = try TestResultFixture.configuration([
            "TLS_CERT_FILE": pki.serverCertificateFile.path,
            "TLS_KEY_FILE": pki.serverKeyFile.path,
            "TLS_CLIENT_CA_FILE": pki.caCertificateFile.path,
            // The lab id the fixture's batches send (`lab-1`).
            "LAB_CERT_SHA256_ALLOWLIST": allowlist.map { "lab-1=\($0)" }.joined(separator: ","),
        ])
        var dependencies = TestResultDependencies.inMemory()
        dependencies.repository = repository
        return try TestResult.buildApplication(
            configuration: configuration,
            dependencies: dependencies,
            environment: .testing()
        )
    }

    private func post(
        port: Int,
        pki: TestPKI,
        client: TestPKI.Client?,
        path: String,
        body: String
    ) async throws -> HTTP.Reply {
        try await HTTP.post("https://127.0.0.1:\(port)\(path)", json: body, tls: try pki.clientTLS(presenting: client))
    }

    private func get(port: Int, pki: TestPKI, path: String) async throws -> HTTP.Reply {
        try await HTTP.get("https://127.0.0.1:\(port)\(path)", tls: try pki.clientTLS(presenting: nil))
    }
}

@Suite("Lab client certificates passed by the gateway")
struct GatewayCertificateTests {
    static let secret = String(repeating: "s3cr3t-", count: 6)
    static let header = "X-SSL-Client-Cert"

    @Test(
        "with the gateway's secret an allowlisted certificate uploads; a wrong or missing secret, an unknown or garbled certificate get 401"
    )
    func gatewayHeader() async throws {
        let pki = try TestPKI.make()
        defer { pki.remove() }
        let allowed = try pki.issueClient(commonName: "lab-allowed")
        let unknown = try pki.issueClient(commonName: "lab-unknown")
        let repository = InMemoryTestResultRepository()
        let configuration = try TestResultFixture.configuration([
            "HTTP_HOST": "0.0.0.0",
            "LAB_CERT_HEADER": Self.header,
            "GATEWAY_SECRET": Self.secret,
            "LAB_CA_FILE": pki.caCertificateFile.path,
            "LAB_CERT_SHA256_ALLOWLIST": "lab-1=\(allowed.thumbprint)",
        ])
        var dependencies = TestResultDependencies.inMemory()
        dependencies.repository = repository
        let app = try TestResultFixture.labApp(configuration: configuration, dependencies: dependencies)
        let allowedPEM = try String(contentsOf: allowed.certificateFile, encoding: .utf8)
        let unknownPEM = try String(contentsOf: unknown.certificateFile, encoding: .utf8)

        try await app.test(.router) { client in
            func upload(secret: String?, certificate: String?) async throws -> (HTTPResponse.Status, String) {
                var headers = HTTPFields.json
                if let secret {
                    headers[ClientCertificateMiddleware.gatewaySecretHeader] = secret
                }
                if let certificate { headers[HTTPField.Name(Self.header)!] = certificate }
                let response = try await client.execute(
                    uri: "/api/v1/lab/results",
                    method: .post,
                    headers: headers,
                    body: TestResultFixture.batch([(TestIDs.hashedGUID(), 2, nil)])
                )
                return (response.status, String(buffer: response.body))
            }
            let escaped = Self.escaped(allowedPEM)

            #expect(try await upload(secret: Self.secret, certificate: escaped).0 == .noContent)
            let wrongSecret = try await upload(secret: Self.secret + "x", certificate: escaped)
            #expect(wrongSecret.0 == .unauthorized)
            #expect(wrongSecret.1.contains("through the gateway"))
            #expect(try await upload(secret: nil, certificate: escaped).0 == .unauthorized)
            let noCertificate = try await upload(secret: Self.secret, certificate: nil)
            #expect(noCertificate.0 == .unauthorized)
            #expect(noCertificate.1.contains("client certificate is required"))
            let stranger = try await upload(secret: Self.secret, certificate: Self.escaped(unknownPEM))
            #expect(stranger.0 == .unauthorized)
            #expect(stranger.1.contains("not allowed"))
            #expect(try await upload(secret: Self.secret, certificate: "%%garbage").0 == .unauthorized)
            #expect(
                try await upload(secret: Self.secret, certificate: Self.escaped(allowedPEM + allowedPEM)).0
                    == .unauthorized
            )
            let health = try await client.execute(uri: "/health/live", method: .get)
            #expect(health.status == .ok)
        }
        #expect(await repository.count == 1)
    }

    @Test("the PEM nginx sends, URL-escaped, yields the DER whose SHA-256 is the thumbprint")
    func escapedPEM() throws {
        let pki = try TestPKI.make()
        defer { pki.remove() }
        let lab = try pki.issueClient(commonName: "lab")
        let pem = try String(contentsOf: lab.certificateFile, encoding: .utf8)

        let der = try #require(ClientCertificateMiddleware.derOfEscapedPEM(Self.escaped(pem)))

        #expect(CertificateThumbprint(derEncodedCertificate: der).hex == lab.thumbprint)
        #expect(
            ClientCertificateMiddleware.derOfEscapedPEM(
                Self.escaped("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----")
            ) == nil
        )
        #expect(ClientCertificateMiddleware.derOfEscapedPEM("not a certificate") == nil)
    }

    @Test("the lab CA's end of validity is exported for the expiry alert")
    func labCAExpiry() async throws {
        let pki = try TestPKI.make()
        defer { pki.remove() }
        let configuration = try TestResultFixture.configuration([
            "HTTP_HOST": "0.0.0.0",
            "LAB_CERT_HEADER": Self.header,
            "GATEWAY_SECRET": Self.secret,
            "LAB_CA_FILE": pki.caCertificateFile.path,
            "LAB_CERT_SHA256_ALLOWLIST": "lab-1=\(String(repeating: "ab", count: 32))",
        ])
        // TestPKI's CA is valid for a day.
        let now = Date().timeIntervalSince1970
        let app = try TestResultFixture.labApp(configuration: configuration, dependencies: .inMemory())

        try await app.test(.router) { client in
            let metrics = try await client.execute(uri: "/metrics", method: .get).body.text
            let line = metrics.split(separator: "\n").first {
                $0.hasPrefix(#"en_certificate_expiry_timestamp_seconds{certificate="lab-ca"} "#)
            }
            let value = try #require(line.flatMap { Double($0.split(separator: " ").last ?? "") })
            #expect(value > now + 86_000 && value < now + 86_500)
        }
    }

    @Test(
        "gateway mode needs a secret of 32+ characters, the lab CA and no TLS of its own, and allows a non-loopback port"
    )
    func configuration() throws {
        let pki = try TestPKI.make()
        defer { pki.remove() }
        let thumbprint = String(repeating: "ab", count: 32)
        let base = [
            "HTTP_HOST": "0.0.0.0", "LAB_CERT_HEADER": Self.header, "LAB_CERT_SHA256_ALLOWLIST": "lab-7=\(thumbprint)",
            "LAB_CA_FILE": pki.caCertificateFile.path,
        ]

        let good = try TestResultFixture.configuration(base.merging(["GATEWAY_SECRET": Self.secret]) { $1 })
        #expect(good.gateway?.header.rawName == Self.header)
        #expect(good.gateway?.labCA.count == 1)
        #expect(good.labCertificateAllowlist.identity(of: CertificateThumbprint(parsing: thumbprint)!)?.name == "lab-7")

        #expect(throws: ConfigurationError.self) { try TestResultFixture.configuration(base) }
        #expect(throws: ConfigurationError.self) {
            try TestResultFixture.configuration(
                base.merging(["GATEWAY_SECRET": Self.secret, "LAB_CA_FILE": "/nonexistent"]) { $1 }
            )
        }
        #expect(throws: ConfigurationError.self) {
            var withoutCA = base.merging(["GATEWAY_SECRET": Self.secret]) { $1 }
            withoutCA["LAB_CA_FILE"] = nil
            return try TestResultFixture.configuration(withoutCA)
        }
        #expect(throws: ConfigurationError.self) {
            try TestResultFixture.configuration(base.merging(["GATEWAY_SECRET": "short"]) { $1 })
        }
        #expect(throws: ConfigurationError.self) {
            try TestResultFixture.configuration(
                base.merging(["GATEWAY_SECRET": Self.secret, "LAB_CERT_SHA256_ALLOWLIST": ""]) { $1 }
            )
        }
        #expect(throws: ConfigurationError.self) {
            try TestResultFixture.configuration(["GATEWAY_SECRET": Self.secret])
        }
    }

    /// What nginx's `$ssl_client_escaped_cert` looks like: the PEM, URL-encoded.
    static func escaped(_ pem: String) -> String {
        pem.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }
}
