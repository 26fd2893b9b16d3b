// Download batches, downloads without the caller's keys, the nextBatchTag chain, the audit, and callbacks.

import ENFederation
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SwiftProtobuf
import Testing
import X509

@testable import EFGSGateway

@Suite("Gateway downloads and callbacks", .postgres(GatewayMigrations.group))
struct DownloadTests {
    static var today: String { FederationProtocol.dayString(Date()) }

    static func download(
        _ client: any TestClientProtocol,
        _ country: TestCountry,
        day: String = Self.today,
        tag: String? = nil,
        accept: String = FederationProtocol.protobufMediaType
    ) async throws -> (HTTPResponse.Status, DiagnosisKeyBatch?, String?, String?) {
        var extra = [("Accept", accept)]
        if let tag { extra.append(("batchTag", tag)) }
        return try await client.execute(
            uri: "/diagnosiskeys/download/\(day)",
            method: .get,
            headers: GatewayFixture.headers(country, extra)
        ) { response in
            let batch =
                response.status == .ok ? try DiagnosisKeyBatch(serializedBytes: Array(buffer: response.body)) : nil
            return (
                response.status, batch, response.headers[HTTPField.Name("batchTag")!],
                response.headers[HTTPField.Name("nextBatchTag")!]
            )
        }
    }

    @Test(
        "uploads form download batches of whole uploads, chained; a country never gets its own keys; the audit covers each"
    )
    func chain() async throws {
        let fixture = try GatewayFixture { $0.downloadBatchKeys = 3 }
        let germany = try TestCountry("DE")
        let france = try TestCountry("FR")
        try await fixture.register(germany)
        try await fixture.register(france)
        let german = [GatewayFixture.keys(2, origin: "DE"), GatewayFixture.keys(2, origin: "DE")]
        let french = GatewayFixture.keys(1, origin: "FR")
        try await fixture.withClient { client async throws in
            let statuses = [
                try await GatewayFixture.upload(client, germany, tag: "de-1", keys: german[0]).0,
                try await GatewayFixture.upload(client, france, tag: "fr-1", keys: french).0,
                try await GatewayFixture.upload(client, germany, tag: "de-2", keys: german[1]).0,
            ]
            #expect(statuses == [.created, .created, .created])
        }
        try await fixture.formBatches()
        let compact = Self.today.replacingOccurrences(of: "-", with: "")
        try await fixture.withClient { client async throws in
            // France walks the chain: de-1 + fr-1 (3 keys) form the first batch, de-2 the second.
            let first = try await Self.download(client, france)
            #expect(first.0 == .ok)
            #expect(first.2 == "\(compact)-1")
            #expect(first.3 == "\(compact)-2")
            #expect(Set(first.1?.keys.map(\.keyData) ?? []) == Set(german[0].map(\.keyData)))
            let second = try await Self.download(client, france, tag: first.3)
            #expect(Set(second.1?.keys.map(\.keyData) ?? []) == Set(german[1].map(\.keyData)))
            #expect(second.3 == "null")
            // Germany sees only France's key.
            let forGermany = try await Self.download(client, germany)
            #expect(forGermany.1?.keys.map(\.keyData) == french.map(\.keyData))

            // The audit of the first batch: de-1 then fr-1, each signature over its own keys.
            let (status, entries) = try await GatewayFixture.audit(client, france, day: Self.today, tag: "\(compact)-1")
            #expect(status == .ok)
            #expect(entries.map(\.country) == ["DE", "FR"])
            #expect(entries.map(\.amount) == [2, 1])
            let verifier = BatchSignatureVerifier(
                anchors: [BatchTrustAnchor(certificate: germany.signing.certificate, country: "DE")]
            )
            let result = await verifier.verify(
                signature: try #require(entries.first).batchSignature,
                batchBytes: BatchSignatureBytes.batch(of: german[0]),
                country: "DE",
                at: Date()
            )
            #expect(try result.get() == germany.signing.certificate)
            #expect(entries.first?.signingCertificate == germany.signing.certificatePEM)
        }
    }

    @Test("download refusals: no Accept 415, an old day 410, an unknown tag or empty day 404, not a date 400")
    func refusals() async throws {
        let fixture = try GatewayFixture()
        let france = try TestCountry("FR")
        try await fixture.register(france)
        try await fixture.withClient { client async throws in
            #expect(try await Self.download(client, france, accept: "application/protobuf").0 == .unsupportedMediaType)
            #expect(try await Self.download(client, france).0 == .notFound)
            #expect(try await Self.download(client, france, tag: "nope").0 == .notFound)
            let old = FederationProtocol.dayString(Date().addingTimeInterval(-3 * 86_400))
            #expect(try await Self.download(client, france, day: old).0 == .gone)
            #expect(try await Self.download(client, france, day: "2026-13-01").0 == .badRequest)
        }
    }

    @Test(
        "callbacks: https without query and a CALLBACK certificate; private addresses only when allowed; new batches queue a call"
    )
    func callbacks() async throws {
        let strict = try GatewayFixture()
        let germany = try TestCountry("DE")
        try await strict.register(germany, callback: true)
        let france = try TestCountry("FR")
        try await strict.register(france)
        try await strict.withClient { client async throws in
            for url in ["http://example.org/cb", "https://example.org/cb?x=1", "https://127.0.0.1/cb", "not a url"] {
                let escaped = url.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                try await client.execute(
                    uri: "/diagnosiskeys/callback/one?url=\(escaped)",
                    method: .put,
                    headers: GatewayFixture.headers(germany)
                ) {
                    #expect($0.status == .badRequest, "\(url)")
                }
            }
            // France has no CALLBACK certificate.
            let escaped = "https://127.0.0.1/cb".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            try await client.execute(
                uri: "/diagnosiskeys/callback/one?url=\(escaped)",
                method: .put,
                headers: GatewayFixture.headers(france)
            ) {
                #expect($0.status == .badRequest)
            }
        }
        let rehearsal = try GatewayFixture { $0.allowPrivateCallbacks = true }
        try await rehearsal.withClient { client async throws in
            let escaped = "https://127.0.0.1:9/version/v1/callback".addingPercentEncoding(
                withAllowedCharacters: .alphanumerics
            )!
            try await client.execute(
                uri: "/diagnosiskeys/callback/de1?url=\(escaped)",
                method: .put,
                headers: GatewayFixture.headers(germany)
            ) {
                #expect($0.status == .ok)
            }
            try await client.execute(
                uri: "/diagnosiskeys/callback",
                method: .get,
                headers: GatewayFixture.headers(germany)
            ) { response in
                let list = try JSONDecoder().decode(
                    [CallbackRegistration].self,
                    from: Data(response.body.readableBytesView)
                )
                #expect(
                    list == [CallbackRegistration(callbackId: "de1", url: "https://127.0.0.1:9/version/v1/callback")]
                )
            }
            #expect(
                try await GatewayFixture.upload(client, france, tag: "fr-1", keys: GatewayFixture.keys(1, origin: "FR"))
                    .0 == .created
            )
        }
        try await rehearsal.formBatches()
        let tasks = try await rehearsal.store.dueCallbackTasks(now: Date())
        #expect(tasks.map(\.country) == ["DE"])
        #expect(tasks.first?.day == Self.today)
        // Failing deliveries are retried, and after the last attempt the subscription goes.
        for _ in 0..<3 {
            let task = try #require(
                try await rehearsal.store.dueCallbackTasks(now: Date().addingTimeInterval(3600)).first
            )
            try await rehearsal.store.failCallbackTask(task, wait: .seconds(1), maximumAttempts: 3, now: Date())
        }
        #expect(try await rehearsal.store.callbacks(country: "DE").isEmpty)
        try await rehearsal.withClient { client async throws in
            try await client.execute(
                uri: "/diagnosiskeys/callback/de1",
                method: .delete,
                headers: GatewayFixture.headers(germany)
            ) {
                #expect($0.status == .notFound)
            }
        }
    }
}
