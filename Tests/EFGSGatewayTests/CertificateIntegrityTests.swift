// The certificate table's integrity (cwa-satellites §5.1): a row is believed only when its certificate matches its
// thumbprint and, with a trust anchor, the anchor signed it; the audit carries the anchor's signatures.

import ENCrypto
import ENFederation
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing
import X509

@testable import EFGSGateway

@Suite("Gateway certificate integrity", .postgres(GatewayMigrations.group))
struct CertificateIntegrityTests {
    static func anchor() throws -> TestSigningCertificate {
        try TestSigningCertificate.make(country: "EU", commonName: "EFGS trust anchor")
    }

    @Test("rows the trust anchor signed are believed: the country uploads (201)")
    func signedRows() async throws {
        let fixture = try GatewayFixture(trustAnchor: try Self.anchor())
        let germany = try TestCountry("DE")
        try await fixture.register(germany)
        #expect(try await fixture.uploadStatus(germany, tag: "de-1", count: 2) == .created)
    }

    @Test(
        "a row without the anchor's signature, signed by another key, or whose certificate is not its thumbprint's is not believed (403)",
        arguments: ["unsigned", "other anchor", "swapped certificate"]
    )
    func tamperedRows(_ tampering: String) async throws {
        let anchor = try Self.anchor()
        let fixture = try GatewayFixture(trustAnchor: anchor)
        let germany = try TestCountry("DE")
        try await fixture.register(germany)
        var row = try fixture.row(germany.authentication, .authentication, country: "DE")
        switch tampering {
        case "unsigned":
            row.signature = nil
        case "other anchor":
            let other = try Self.anchor()
            row.signature = try BatchSigner(
                certificatePEM: other.certificatePEM,
                privateKeyPEM: other.privateKeyPEM
            )
            .signature(ofCertificatePEM: row.pem)
        default:
            // Another certificate under the registered thumbprint, properly signed by the anchor.
            let intruder = try TestSigningCertificate.make(country: "DE", commonName: "intruder")
            row.pem = intruder.certificatePEM
            row.signature = try fixture.rowSigner?.signature(ofCertificatePEM: intruder.certificatePEM)
        }
        try await fixture.store.register(row)
        #expect(try await fixture.store.certificate(thumbprint: row.thumbprint, kind: .authentication) == nil)
        #expect(try await fixture.store.allCertificates(country: "DE").count == 2, "the row is still there, ignored")
        #expect(try await fixture.uploadStatus(germany, tag: "de-1", count: 1) == .forbidden)
        #expect(try await fixture.database.count("upload_batch") == 0)
    }

    @Test("without a trust anchor a row is still checked against its thumbprint")
    func thumbprintWithoutAnchor() async throws {
        let fixture = try GatewayFixture()
        let germany = try TestCountry("DE")
        try await fixture.register(germany)
        var row = try fixture.row(germany.authentication, .authentication, country: "DE")
        #expect(try await fixture.store.certificate(thumbprint: row.thumbprint, kind: .authentication) != nil)
        row.pem = try TestSigningCertificate.make(country: "DE").certificatePEM
        try await fixture.store.register(row)
        #expect(try await fixture.store.certificate(thumbprint: row.thumbprint, kind: .authentication) == nil)
    }

    @Test("the audit carries the anchor's signatures of the uploader's and the signing certificate's rows")
    func auditSignatures() async throws {
        let anchor = try Self.anchor()
        let fixture = try GatewayFixture(trustAnchor: anchor)
        let germany = try TestCountry("DE")
        let france = try TestCountry("FR")
        try await fixture.register(germany)
        try await fixture.register(france)
        #expect(try await fixture.uploadStatus(germany, tag: "de-1", count: 2) == .created)
        try await fixture.formBatches()
        let today = FederationProtocol.dayString(Date())
        let tag = today.replacingOccurrences(of: "-", with: "") + "-1"
        try await fixture.withClient { client async throws in
            let (status, entries) = try await GatewayFixture.audit(client, france, day: today, tag: tag)
            #expect(status == .ok)
            let entry = try #require(entries.first)
            let verifier = DetachedSignatureVerifier(roots: [anchor.certificate])
            for (signature, certificate) in [
                (entry.uploaderOperatorSignature, germany.authentication.certificate),
                (entry.signingCertificateOperatorSignature, germany.signing.certificate),
            ] {
                let result = await verifier.verify(
                    signature: try #require(signature),
                    content: try certificate.derEncoded(),
                    at: Date()
                )
                #expect(try result.get() == anchor.certificate)
            }
        }
    }

    @Test("country add signs each row with the trust anchor's certificate and key, which go together")
    func countryAdd() throws {
        let anchor = try Self.anchor()
        let germany = try TestCountry("DE")
        let files = try CommandFiles(germany, anchor)
        defer { files.remove() }
        let (auth, anchorCertificate, anchorKey) = (files.auth, files.anchorCertificate, files.anchorKey)
        guard
            case .success(.add(let rows)) = CountryCommands.plan([
                "add", "DE", "--auth-cert", auth, "--trust-anchor-cert", anchorCertificate, "--trust-anchor-key",
                anchorKey,
            ])
        else {
            Issue.record("add with a trust anchor was not planned")
            return
        }
        #expect(rows.count == 1)
        #expect(rows[0].signature != nil)
        guard case .success(.add(let unsigned)) = CountryCommands.plan(["add", "DE", "--auth-cert", auth]) else {
            Issue.record("add without a trust anchor was not planned")
            return
        }
        #expect(unsigned[0].signature == nil)
        guard
            case .success(.add(let repeated)) = CountryCommands.plan([
                "add", "DE", "--auth-cert", auth, "--signing-cert", auth, "--signing-cert", auth,
            ])
        else {
            Issue.record("add with two signing certificates was not planned")
            return
        }
        #expect(
            repeated.map(\.kind) == [.authentication, .signing, .signing],
            "each certificate option is its own row"
        )
        guard case .failure = CountryCommands.plan(["add", "DE", "--signing-cert", auth]) else {
            Issue.record("add without an authentication certificate was accepted")
            return
        }
        guard case .failure = CountryCommands.plan(["add", "DE", "--auth-cert", auth, "--trust-anchor-key", anchorKey])
        else {
            Issue.record("a trust anchor key without its certificate was accepted")
            return
        }
    }
}

extension CertificateIntegrityTests {
    @Test("a signing row the anchor did not sign verifies nothing: the upload is 400 and nothing is stored")
    func forgedSigningRow() async throws {
        let fixture = try GatewayFixture(trustAnchor: try Self.anchor())
        let germany = try TestCountry("DE")
        try await fixture.register(germany)
        var row = try fixture.row(germany.signing, .signing, country: "DE")
        row.signature = nil
        try await fixture.store.register(row)
        #expect(try await fixture.uploadStatus(germany, tag: "de-1", count: 2) == .badRequest)
        #expect(try await fixture.database.count("upload_batch") == 0)
        #expect(try await fixture.database.count("diagnosis_key") == 0)
    }
}

extension CertificateIntegrityTests {
    @Test(
        "country add with EFGS_TRUST_ANCHOR_FILE set: unsigned rows are refused (exit 2, nothing stored); signed ones stored"
    )
    func countryAddChecksRows() async throws {
        let fixture = try GatewayFixture()
        let anchor = try Self.anchor()
        let germany = try TestCountry("DE")
        let files = try CommandFiles(germany, anchor)
        defer { files.remove() }
        let (auth, anchorCertificate, anchorKey) = (files.auth, files.anchorCertificate, files.anchorKey)
        var environment = fixture.database.processEnvironment
        environment["EFGS_TRUST_ANCHOR_FILE"] = anchorCertificate
        let unsigned = await CountryCommands.run(
            ["country", "add", "DE", "--auth-cert", auth],
            environment: environment
        )
        #expect(unsigned == 2)
        #expect(try await fixture.database.count("certificate") == 0)
        let signed = await CountryCommands.run(
            [
                "country", "add", "DE", "--auth-cert", auth, "--trust-anchor-cert", anchorCertificate,
                "--trust-anchor-key", anchorKey,
            ],
            environment: environment
        )
        #expect(signed == 0)
        #expect(try await fixture.database.count("certificate", where: "signature IS NOT NULL") == 1)
    }
}

/// The files `country add` reads: a country's authentication certificate and a trust anchor's certificate and key.
struct CommandFiles {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("efgs-\(UUID().uuidString)")
    let auth: String
    let anchorCertificate: String
    let anchorKey: String

    init(_ country: TestCountry, _ anchor: TestSigningCertificate) throws {
        try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
        func file(_ name: String, _ text: String, in folder: URL) throws -> String {
            let url = folder.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        self.auth = try file("auth.pem", country.authentication.certificatePEM, in: self.folder)
        self.anchorCertificate = try file("anchor.pem", anchor.certificatePEM, in: self.folder)
        self.anchorKey = try file("anchor.key", anchor.privateKeyPEM, in: self.folder)
    }

    func remove() { try? FileManager.default.removeItem(at: self.folder) }
}
