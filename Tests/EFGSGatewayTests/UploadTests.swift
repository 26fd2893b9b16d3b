// Uploads (cwa-satellites §5.2–§5.4): every check in the reference's order, its status, and nothing stored on refusal.

import ENFederation
import ENModels
import ENTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SwiftProtobuf
import Testing

@testable import EFGSGateway

@Suite("Gateway uploads", .postgres(GatewayMigrations.group))
struct UploadTests {
    @Test("a signed batch is taken (201, batchTag echoed); its tag again is 409; its keys again are 207 with 409s")
    func upload() async throws {
        let fixture = try GatewayFixture()
        let germany = try TestCountry("DE")
        try await fixture.register(germany)
        let keys = GatewayFixture.keys(3, origin: "DE")
        try await fixture.withClient { client async throws in
            let first = try await GatewayFixture.upload(client, germany, tag: "de-1", keys: keys)
            #expect(first.0 == .created)
            #expect(first.2[HTTPField.Name("batchTag")!] == "de-1")
            #expect(
                try await GatewayFixture.upload(
                    client,
                    germany,
                    tag: "de-1",
                    keys: GatewayFixture.keys(1, origin: "DE")
                ).0 == .conflict
            )
            let fresh = GatewayFixture.keys(1, origin: "DE")
            let again = try await GatewayFixture.upload(client, germany, tag: "de-2", keys: [keys[1], fresh[0]])
            #expect(again.0.code == 207)
            #expect(
                try JSONDecoder().decode(BatchUploadResponse.self, from: Data(again.1.utf8))
                    == BatchUploadResponse(created: [1], conflict: [0])
            )
        }
        #expect(try await fixture.database.count("diagnosis_key") == 3, "the 207 stored nothing")
        #expect(try await fixture.database.count("upload_batch") == 1, "the 207's tag stays unused")
    }

    @Test("JSON uploads with version 1.0 are taken too")
    func json() async throws {
        let fixture = try GatewayFixture()
        let germany = try TestCountry("DE")
        try await fixture.register(germany)
        let keys = GatewayFixture.keys(2, origin: "DE")
        var batch = DiagnosisKeyBatch()
        batch.keys = keys
        let json = try batch.jsonString()
        try await fixture.withClient { client async throws in
            let answer = try await GatewayFixture.upload(
                client,
                germany,
                tag: "json-1",
                keys: keys,
                contentType: FederationProtocol.jsonMediaType,
                body: ByteBuffer(string: json)
            )
            #expect(answer.0 == .created)
        }
        #expect(try await fixture.database.count("diagnosis_key") == 2)
    }

    @Test(
        "the content type: unknown or without version 400, another version 406",
        arguments: [
            ("application/protobuf", 400), ("text/plain; version=1.0", 400), ("application/protobuf; version=1", 400),
            ("application/protobuf; version=2.0", 406), ("application/json; version=1.1", 406),
        ]
    )
    func contentType(_ type: String, _ status: Int) async throws {
        let fixture = try GatewayFixture()
        let germany = try TestCountry("DE")
        try await fixture.register(germany)
        try await fixture.withClient { client async throws in
            let answer = try await GatewayFixture.upload(
                client,
                germany,
                tag: "t",
                keys: GatewayFixture.keys(1, origin: "DE"),
                contentType: type
            )
            #expect(answer.0.code == status)
        }
        #expect(try await fixture.database.count("upload_batch") == 0)
    }

    @Test("refusals: bad key, bad signature, another country's signer, another origin, too many keys")
    func refusals() async throws {
        let fixture = try GatewayFixture()
        let germany = try TestCountry("DE")
        let france = try TestCountry("FR")
        try await fixture.register(germany)
        try await fixture.register(france)
        try await fixture.withClient { client async throws in
            var short = GatewayFixture.keys(1, origin: "DE")
            short[0].keyData = Data([1, 2, 3])
            #expect(try await GatewayFixture.upload(client, germany, tag: "a", keys: short).0 == .badRequest)

            var period = GatewayFixture.keys(1, origin: "DE")
            period[0].rollingPeriod = 0
            #expect(try await GatewayFixture.upload(client, germany, tag: "b", keys: period).0 == .badRequest)

            let keys = GatewayFixture.keys(2, origin: "DE")
            var tampered = keys
            tampered[1].daysSinceOnsetOfSymptoms = 5
            let invalid = try await GatewayFixture.upload(
                client,
                germany,
                tag: "c",
                keys: tampered,
                signature: try germany.signature(keys)
            )
            #expect(invalid.0 == .badRequest)
            #expect(invalid.1.contains("Invalid signature"))

            // France's signature on German keys, sent with Germany's authentication.
            #expect(
                try await GatewayFixture.upload(
                    client,
                    germany,
                    tag: "d",
                    keys: keys,
                    signature: try france.signature(keys)
                ).0 == .badRequest
            )

            let french = GatewayFixture.keys(1, origin: "FR")
            let origin = try await GatewayFixture.upload(
                client,
                germany,
                tag: "e",
                keys: french,
                signature: try germany.signature(french)
            )
            #expect(origin.0 == .badRequest)
            #expect(origin.1.contains("origin"))

            let many = GatewayFixture.keys(5001, origin: "DE")
            #expect(try await GatewayFixture.upload(client, germany, tag: "f", keys: many).0 == .contentTooLarge)

            #expect(
                try await GatewayFixture.upload(client, germany, tag: "g", keys: [], signature: "AAAA").0 == .badRequest
            )
        }
        #expect(try await fixture.database.count("upload_batch") == 0)
        #expect(try await fixture.database.count("diagnosis_key") == 0)
    }

    @Test("authentication: no headers, a wrong secret or an unknown certificate 403; a subject without C 400")
    func authentication() async throws {
        let fixture = try GatewayFixture()
        let germany = try TestCountry("DE")
        let stranger = try TestCountry("NL")
        try await fixture.register(germany)
        try await fixture.withClient { client async throws in
            try await client.execute(uri: "/diagnosiskeys/callback", method: .get) { #expect($0.status == .forbidden) }
            var wrong = GatewayFixture.headers(germany)
            wrong[HTTPField.Name("X-Gateway-Secret")!] = String(repeating: "x", count: 40)
            try await client.execute(uri: "/diagnosiskeys/callback", method: .get, headers: wrong) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(
                uri: "/diagnosiskeys/callback",
                method: .get,
                headers: GatewayFixture.headers(stranger)
            ) {
                #expect($0.status == .forbidden)
            }
            var noCountry = GatewayFixture.headers(germany)
            noCountry[HTTPField.Name("X-SSL-Client-DN")!] = "CN=someone,O=somewhere"
            try await client.execute(uri: "/diagnosiskeys/callback", method: .get, headers: noCountry) {
                #expect($0.status == .badRequest)
            }
            // The thumbprint as Base64 of the raw bytes, URL-encoded, is accepted as well.
            var base64 = GatewayFixture.headers(germany)
            let raw = Data(
                stride(from: 0, to: 64, by: 2).map { index -> UInt8 in
                    let start = germany.thumbprint.index(germany.thumbprint.startIndex, offsetBy: index)
                    return UInt8(germany.thumbprint[start..<germany.thumbprint.index(start, offsetBy: 2)], radix: 16)!
                }
            )
            base64[HTTPField.Name("X-SSL-Client-SHA256")!] = raw.base64EncodedString().addingPercentEncoding(
                withAllowedCharacters: .alphanumerics
            )
            try await client.execute(uri: "/diagnosiskeys/callback", method: .get, headers: base64) {
                #expect($0.status == .ok)
            }
        }
        #expect(try await fixture.store.revoke(country: "DE", kind: .authentication) == 1)
        try await fixture.withClient { client async throws in
            try await client.execute(
                uri: "/diagnosiskeys/callback",
                method: .get,
                headers: GatewayFixture.headers(germany)
            ) {
                #expect($0.status == .forbidden)
            }
        }
    }
}
