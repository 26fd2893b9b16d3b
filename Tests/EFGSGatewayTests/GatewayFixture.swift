// One test's gateway: its router on the test's own database, countries registered with their certificates, and
// requests made as the TLS front makes them.

import ENCrypto
import ENFederation
import ENModels
import ENPersistence
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MetricsTestKit
import NIOCore
import SwiftProtobuf
import Testing
import X509

@testable import EFGSGateway

/// A registered country: its authentication and signing certificates.
struct TestCountry: Sendable {
    let code: String
    let authentication: TestSigningCertificate
    let signing: TestSigningCertificate
    let signer: BatchSigner

    init(_ code: String) throws {
        self.code = code
        self.authentication = try TestSigningCertificate.make(country: code, commonName: "EFGS client \(code)")
        self.signing = try TestSigningCertificate.make(country: code)
        self.signer = try BatchSigner(
            certificatePEM: self.signing.certificatePEM,
            privateKeyPEM: self.signing.privateKeyPEM
        )
    }

    var thumbprint: String {
        CertificateThumbprint(derEncodedCertificate: try! self.authentication.certificate.derEncoded()).hex
    }
    var distinguishedName: String { self.authentication.certificate.subject.description }

    func signature(_ keys: [FederationDiagnosisKey]) throws -> String {
        try self.signer.sign(BatchSignatureBytes.batch(of: keys), at: Date())
    }
}

struct GatewayFixture: Sendable {
    static let secret = String(repeating: "g", count: 40)

    let database: PostgresTestDatabase
    let store: GatewayStore
    let settings: GatewaySettings
    let metrics = TestMetrics()
    /// Signs the rows `register` writes, when the gateway checks them against a trust anchor.
    let rowSigner: BatchSigner?

    /// A gateway; with `trustAnchor`, it believes only rows that anchor signed, and `register` signs with it.
    init(trustAnchor: TestSigningCertificate? = nil, _ change: (inout GatewaySettings) -> Void = { _ in }) throws {
        self.database = try PostgresTestDatabase.require()
        self.store = GatewayStore(
            client: self.database.client,
            logger: self.database.logger,
            integrity: CertificateIntegrity(trustAnchor: trustAnchor?.certificate),
            // As the other services' tests: on a loaded machine a request waits for a connection rather than fail.
            leaseTimeout: DatabasePool.unhurriedLeaseTimeout
        )
        self.rowSigner = try trustAnchor.map {
            try BatchSigner(certificatePEM: $0.certificatePEM, privateKeyPEM: $0.privateKeyPEM)
        }
        var settings = GatewaySettings()
        change(&settings)
        self.settings = settings
    }

    /// A row of `certificate`, signed by the fixture's trust anchor when it has one.
    func row(
        _ certificate: TestSigningCertificate,
        _ kind: CountryCertificate.Kind,
        country: String
    ) throws
        -> CountryCertificate
    {
        CountryCertificate(
            thumbprint: CertificateThumbprint(derEncodedCertificate: try certificate.certificate.derEncoded()).hex,
            kind: kind,
            country: country,
            revoked: false,
            pem: certificate.certificatePEM,
            signature: try self.rowSigner?.signature(ofCertificatePEM: certificate.certificatePEM)
        )
    }

    /// Registers `country`'s certificates (and a callback certificate when asked).
    func register(_ country: TestCountry, callback: Bool = false) async throws {
        try await self.store.register(try self.row(country.authentication, .authentication, country: country.code))
        try await self.store.register(try self.row(country.signing, .signing, country: country.code))
        if callback {
            try await self.store.register(try self.row(country.signing, .callback, country: country.code))
        }
    }

    /// The audit of download batch `tag` of `day`, asked as `country`: the status, and the entries of a 200.
    static func audit(
        _ client: any TestClientProtocol,
        _ country: TestCountry,
        day: String,
        tag: String
    )
        async throws -> (HTTPResponse.Status, [AuditEntryBody])
    {
        try await client.execute(
            uri: "/diagnosiskeys/audit/download/\(day)/\(tag)",
            method: .get,
            headers: Self.headers(country)
        ) { response in
            guard response.status == .ok else { return (response.status, []) }
            return (
                response.status,
                try JSONDecoder().decode([AuditEntryBody].self, from: Data(response.body.readableBytesView))
            )
        }
    }

    /// The status of one upload of `count` fresh keys of `country` with tag `tag`, through a client of its own.
    func uploadStatus(_ country: TestCountry, tag: String, count: Int) async throws -> HTTPResponse.Status {
        let status = Mutexed(HTTPResponse.Status.internalServerError)
        try await self.withClient { client async throws in
            let answer = try await Self.upload(client, country, tag: tag, keys: Self.keys(count, origin: country.code))
            status.withLock { $0 = answer.0 }
        }
        return status.withLock { $0 }
    }

    /// One pass of the gateway's batching: the uploads so far become download batches (and callback tasks).
    func formBatches() async throws {
        try await BatchingPass(
            store: self.store,
            settings: self.settings,
            clock: .system,
            metrics: GatewayMetrics(factory: self.metrics),
            logger: self.database.logger
        ).run()
    }

    func withClient(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let router = Router(context: CountryRequestContext.self)
        router.middlewares.add(ErrorMiddleware())
        let api = router.group().add(
            middleware: CountryAuthenticationMiddleware(store: self.store, source: .front(secret: Self.secret))
        )
        GatewayController(
            store: self.store,
            settings: self.settings,
            clock: .system,
            metrics: GatewayMetrics(factory: self.metrics)
        )
        .addRoutes(to: api)
        try await Application(router: router).test(.router) { client in try await body(client) }
    }

    /// The headers the TLS front sets for `country`'s authentication certificate.
    static func headers(_ country: TestCountry, _ extra: [(String, String)] = []) -> HTTPFields {
        var fields = HTTPFields()
        fields[HTTPField.Name("X-Gateway-Secret")!] = Self.secret
        fields[HTTPField.Name("X-SSL-Client-SHA256")!] = country.thumbprint
        fields[HTTPField.Name("X-SSL-Client-DN")!] = country.distinguishedName
        for (name, value) in extra { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    static func keys(_ count: Int, origin: String) -> [FederationDiagnosisKey] {
        let start = UInt32(Calendar.utc.startOfDay(for: Date()).timeIntervalSince1970 / 600) - 144
        return (0..<count).map { _ in
            var key = FederationDiagnosisKey()
            key.keyData = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
            key.rollingStartIntervalNumber = start
            key.rollingPeriod = 144
            key.transmissionRiskLevel = 5
            key.visitedCountries = ["DE", "FR"]
            key.origin = origin
            key.reportType = .confirmedTest
            key.daysSinceOnsetOfSymptoms = -2
            return key
        }
    }

    static func body(_ keys: [FederationDiagnosisKey]) throws -> ByteBuffer {
        var batch = DiagnosisKeyBatch()
        batch.keys = keys
        return ByteBuffer(bytes: try batch.serializedBytes() as [UInt8])
    }

    /// Uploads `keys` as `country` with tag `tag`; returns the response status and body.
    static func upload(
        _ client: any TestClientProtocol,
        _ country: TestCountry,
        tag: String,
        keys: [FederationDiagnosisKey],
        signature: String? = nil,
        contentType: String = FederationProtocol.protobufMediaType,
        body: ByteBuffer? = nil
    ) async throws -> (HTTPResponse.Status, String, HTTPFields) {
        let headers = Self.headers(
            country,
            [
                ("Content-Type", contentType), ("batchTag", tag),
                ("batchSignature", try signature ?? country.signature(keys)),
            ]
        )
        return try await client.execute(
            uri: "/diagnosiskeys/upload",
            method: .post,
            headers: headers,
            body: try body ?? Self.body(keys)
        ) {
            response in (response.status, String(buffer: response.body), response.headers)
        }
    }
}
