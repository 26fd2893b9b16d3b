// Labs are who their certificates say: the gateway's header is checked against the lab CA, results belong to the
// lab that uploaded them, and nothing downgrades a lab's verdict (issue 15, finding 3).

import ENCrypto
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Testing

@testable import TestResultService

@Suite("Lab identity (PostgreSQL)", .postgres(TestResultMigrations.group))
struct LabIdentityTests {
    static let header = "X-SSL-Client-Cert"
    static let secret = String(repeating: "s", count: 40)

    /// Two labs of the lab CA (`lab-a`, `lab-b`), and one certificate of another CA that is allowlisted anyway.
    struct Labs: Sendable {
        let a: String
        let b: String
        let foreign: String
    }

    /// The lab API in gateway mode over the test database, with `lab-a`, `lab-b` and the foreign certificate
    /// allowlisted; `body` gets an upload function (certificate PEM, batch) → status and message.
    private func withLabs(
        _ body:
            @Sendable (Labs, _ upload: @Sendable (String, ByteBuffer) async throws -> (HTTPResponse.Status, String))
            async throws -> Void
    ) async throws {
        let database = try PostgresTestDatabase.require()
        let pki = try TestPKI.make()
        let other = try TestPKI.make(name: "Another CA")
        defer {
            pki.remove()
            other.remove()
        }
        let a = try pki.issueClient(commonName: "lab-a")
        let b = try pki.issueClient(commonName: "lab-b")
        let foreign = try other.issueClient(commonName: "lab-foreign")
        let configuration = try TestResultFixture.configuration([
            "HTTP_HOST": "0.0.0.0", "LAB_CERT_HEADER": Self.header, "GATEWAY_SECRET": Self.secret,
            "LAB_CA_FILE": pki.caCertificateFile.path,
            "LAB_CERT_SHA256_ALLOWLIST": "lab-a=\(a.thumbprint),lab-b=\(b.thumbprint),lab-f=\(foreign.thumbprint)",
        ])
        let app = try TestResultFixture.labApp(
            configuration: configuration,
            dependencies: .postgres(client: database.client, logger: database.logger)
        )
        let labs = Labs(
            a: try String(contentsOf: a.certificateFile, encoding: .utf8),
            b: try String(contentsOf: b.certificateFile, encoding: .utf8),
            foreign: try String(contentsOf: foreign.certificateFile, encoding: .utf8)
        )
        try await app.test(.router) { client in
            try await body(labs) { pem, batch in
                var headers = HTTPFields.json
                headers[ClientCertificateMiddleware.gatewaySecretHeader] = Self.secret
                headers[HTTPField.Name(Self.header)!] = GatewayCertificateTests.escaped(pem)
                let response = try await client.execute(
                    uri: "/api/v1/lab/results",
                    method: .post,
                    headers: headers,
                    body: batch
                )
                return (response.status, String(buffer: response.body))
            }
        }
    }

    private func stored(_ id: String) async throws -> (code: Int, lab: String?)? {
        let database = try PostgresTestDatabase.require()
        let rows = try await database.client.query("SELECT result, lab_id FROM test_result WHERE result_id = \(id)")
        for try await (code, lab) in rows.decode((Int16, String?).self) { return (Int(code), lab) }
        return nil
    }

    @Test("an allowlisted certificate of another CA is refused even with the gateway's secret")
    func chainChecked() async throws {
        try await self.withLabs { labs, upload in
            let id = TestIDs.hashedGUID()
            let (status, _) = try await upload(labs.foreign, TestResultFixture.batch(labID: nil, [(id, 2, nil)]))

            #expect(status == .unauthorized)
            #expect(try await self.stored(id) == nil)
        }
    }

    @Test("results are stored under the certificate's lab id; a body naming another lab gets 403")
    func labIDFromCertificate() async throws {
        try await self.withLabs { labs, upload in
            let (id, other) = (TestIDs.hashedGUID(), TestIDs.hashedGUID())
            let (stored, _) = try await upload(labs.a, TestResultFixture.batch(labID: nil, [(id, 2, nil)]))
            let (claimed, _) = try await upload(labs.a, TestResultFixture.batch(labID: "lab-b", [(other, 2, nil)]))

            #expect(stored == .noContent)
            #expect(try await self.stored(id)?.lab == "lab-a")
            #expect(claimed == .forbidden)
            #expect(try await self.stored(other) == nil)
        }
    }

    @Test("another lab cannot change a lab's result: 409, and nothing of its batch is stored")
    func ownership() async throws {
        try await self.withLabs { labs, upload in
            let (id, fresh) = (TestIDs.hashedGUID(), TestIDs.hashedGUID())
            _ = try await upload(labs.a, TestResultFixture.batch(labID: nil, [(id, 2, nil)]))

            let (flipped, message) = try await upload(
                labs.b,
                TestResultFixture.batch(labID: nil, [(fresh, 1, nil), (id, 1, nil)])
            )
            let (corrected, _) = try await upload(labs.a, TestResultFixture.batch(labID: nil, [(id, 3, nil)]))

            #expect(flipped == .conflict)
            #expect(message.contains("another lab"))
            #expect(try await self.stored(fresh) == nil)
            #expect(corrected == .noContent)
            #expect(try await self.stored(id)?.code == 3)
        }
    }
}
