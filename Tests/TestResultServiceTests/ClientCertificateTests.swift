// The lab-certificate allowlist over real TLS on loopback.

import ENServiceKit
import ENTestSupport
import Foundation
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
            let withAllowed = try await self.post(port: port, pki: pki, client: allowed, path: "/api/v1/lab/results", body: body)
            let withUnknown = try await self.post(port: port, pki: pki, client: unknown, path: "/api/v1/lab/results", body: body)
            let withNone = try await self.post(port: port, pki: pki, client: nil, path: "/api/v1/lab/results", body: body)
            let lookupWithNone = try await self.post(port: port, pki: pki, client: nil, path: "/api/v1/quicktest/result", body: #"{"id":"\#(TestIDs.hashedGUID())"}"#)
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
                _ = try await self.post(port: port, pki: pki, client: stranger, path: "/api/v1/lab/results", body: batch)
            }
        }
        #expect(await repository.count == 0)
    }

    // MARK: - Helpers

    private func tlsApp(pki: TestPKI, allowlist: [String], repository: InMemoryTestResultRepository) throws -> TestResult.App {
        let configuration = try TestResultFixture.configuration([
            "TLS_CERT_FILE": pki.serverCertificateFile.path,
            "TLS_KEY_FILE": pki.serverKeyFile.path,
            "TLS_CLIENT_CA_FILE": pki.caCertificateFile.path,
            "LAB_CERT_SHA256_ALLOWLIST": allowlist.joined(separator: ","),
        ])
        var dependencies = TestResultDependencies.inMemory()
        dependencies.repository = repository
        return try TestResult.buildApplication(configuration: configuration, dependencies: dependencies, environment: .testing())
    }

    private func post(port: Int, pki: TestPKI, client: TestPKI.Client?, path: String, body: String) async throws -> HTTP.Reply {
        try await HTTP.post("https://127.0.0.1:\(port)\(path)", json: body, tls: try pki.clientTLS(presenting: client))
    }

    private func get(port: Int, pki: TestPKI, path: String) async throws -> HTTP.Reply {
        try await HTTP.get("https://127.0.0.1:\(port)\(path)", tls: try pki.clientTLS(presenting: nil))
    }
}
