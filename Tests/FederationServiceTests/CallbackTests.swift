// The callback through the production router (HummingbirdTesting, in-memory stores): only the gateway's callback
// certificate (by common name, chained to the CA, through our gateway's header with its secret) may announce a batch;
// bad parameters are 400 and change nothing.

import ENFederation
import ENKeyStore
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import X509

@testable import FederationService

@Suite("Callback")
struct CallbackTests {
    static let secret = String(repeating: "s", count: 40)

    /// The production router of a callback-only configuration behind our gateway's header, on in-memory stores.
    func withApp(
        _ body: @escaping @Sendable (any TestClientProtocol, any FederationRepository, TestPKI) async throws -> Void
    ) async throws {
        let pki = try TestPKI.make(name: "EN Test EFGS CA")
        defer { pki.remove() }
        let dependencies = FederationDependencies.inMemory(gateway: ScriptedGateway())
        let app = Application(router: try Self.router(pki, dependencies))
        try await app.test(.router) { client in try await body(client, dependencies.store, pki) }
    }

    /// The production router, the callback's CA being `pki`'s.
    static func router(
        _ pki: TestPKI,
        _ dependencies: FederationDependencies
    ) throws -> Router<CertificateRequestContext> {
        let settings = SettingsReader(values: [
            "DATABASE_URL": "postgres://test:secret@127.0.0.1:1/test?sslmode=disable",
            "FEDERATION_CALLBACK_ONLY": "true",
            "EFGS_CALLBACK_CERT_CN": "efgs-callback",
            "CALLBACK_CERT_HEADER": "X-SSL-Client-Cert",
            "GATEWAY_SECRET": Self.secret,
            "CALLBACK_CA_FILE": pki.caCertificateFile.path,
        ])
        let configuration = FederationConfiguration(settings: settings)
        try #require(settings.problems.isEmpty, "\(settings.problems)")
        return try Federation.buildRouter(
            configuration: configuration,
            dependencies: dependencies,
            environment: .testing()
        )
    }

    @Test("the router mounts exactly the operations openapi.yaml lists, the callback included")
    func routesMatchDocument() throws {
        let pki = try TestPKI.make(name: "EN Test EFGS CA")
        defer { pki.remove() }
        let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Services/Federation/openapi.yaml")
        let documented = Set(try OpenAPIDocument.operations(in: document).map { "\($0.method) \($0.path)" })
        #expect(documented.contains("GET /version/v1/callback"))
        try Self.router(pki, FederationDependencies.inMemory(gateway: ScriptedGateway())).expectMounts(
            exactly: documented
        )
    }

    /// Every batch the store knows, in any state.
    static func allBatches(_ store: any FederationRepository) async throws -> [BatchInfo] {
        var all: [BatchInfo] = []
        for status in BatchStatus.allCases { all += try await store.batches(status) }
        return all
    }

    static func headers(_ certificateFile: URL?, secret: String = Self.secret) throws -> HTTPFields {
        var fields = HTTPFields()
        fields[HTTPField.Name("X-Gateway-Secret")!] = secret
        if let certificateFile {
            let pem = try String(contentsOf: certificateFile, encoding: .utf8)
            fields[HTTPField.Name("X-SSL-Client-Cert")!] = pem.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics
            )
        }
        return fields
    }

    @Test("the callback certificate announces a batch: 200, empty body, recorded once")
    func announces() async throws {
        try await self.withApp { client, store, pki in
            let callback = try pki.issueClient(commonName: "efgs-callback")
            let day = FederationProtocol.dayString(Date().addingTimeInterval(-3 * 86_400))
            for _ in 0..<2 {
                try await client.execute(
                    uri: "/version/v1/callback?batchTag=20261122-1&date=\(day)",
                    method: .get,
                    headers: try Self.headers(callback.certificateFile)
                ) { response in
                    #expect(response.status == .ok)
                    #expect(response.body.readableBytes == 0)
                }
            }
            #expect(
                try await store.batches(.unprocessed) == [
                    BatchInfo(tag: "20261122-1", day: day, status: .unprocessed)
                ]
            )
        }
    }

    @Test("another common name, no certificate or a wrong secret: 401 and nothing recorded")
    func refusesOthers() async throws {
        try await self.withApp { client, store, pki in
            let other = try pki.issueClient(commonName: "lab-a")
            let callback = try pki.issueClient(commonName: "efgs-callback")
            let uri = "/version/v1/callback?batchTag=t&date=\(Self.recentDay)"
            for headers in [
                try Self.headers(other.certificateFile), try Self.headers(nil),
                try Self.headers(callback.certificateFile, secret: String(repeating: "x", count: 40)),
            ] {
                try await client.execute(uri: uri, method: .get, headers: headers) { response in
                    #expect(response.status == .unauthorized)
                }
            }
            #expect(try await Self.allBatches(store).isEmpty)
        }
    }

    /// A day the callback accepts: three days ago.
    static let recentDay = FederationProtocol.dayString(Date().addingTimeInterval(-3 * 86_400))

    @Test(
        "a missing or malformed batch tag or date, or a day outside the retention and tomorrow, is 400",
        arguments: [
            "", "?date=\(Self.recentDay)", "?batchTag=t", "?batchTag=&date=\(Self.recentDay)",
            "?batchTag=t&date=04-03-2020", "?batchTag=t&date=2026-02-30", "?batchTag=t&date=2026-13-01",
            "?batchTag=\(String(repeating: "a", count: 65))&date=\(Self.recentDay)", "?batchTag=t&date=9999-12-31",
            "?batchTag=t&date=\(FederationProtocol.dayString(Date().addingTimeInterval(3 * 86_400)))",
            "?batchTag=t&date=\(FederationProtocol.dayString(Date().addingTimeInterval(-30 * 86_400)))",
        ]
    )
    func badParameters(_ query: String) async throws {
        try await self.withApp { client, store, pki in
            let callback = try pki.issueClient(commonName: "efgs-callback")
            try await client.execute(
                uri: "/version/v1/callback\(query)",
                method: .get,
                headers: try Self.headers(callback.certificateFile)
            ) { response in
                #expect(response.status == .badRequest)
            }
            #expect(try await Self.allBatches(store).isEmpty)
        }
    }
}
