// Pure rules: which keys may leave, how they are split, the 207 interpretation, the callback id.

import ENFederation
import ENServiceKit
import ENTestSupport
import Foundation
import Testing

@testable import FederationService

@Suite("Upload policy")
struct PolicyTests {
    static func key(start: Int32, period: Int32 = 144, hour: Int64) -> UploadKey {
        UploadKey(
            keyData: (0..<16).map { _ in UInt8.random(in: 0...255) },
            submissionType: "SUBMISSION_TYPE_PCR_TEST",
            rollingStartIntervalNumber: start,
            rollingPeriod: period,
            submissionHour: hour,
            transmissionRiskLevel: 5,
            originCountry: "DE",
            visitedCountries: ["DE"],
            reportType: "CONFIRMED_TEST",
            daysSinceOnsetOfSymptoms: 1
        )
    }

    @Test("a key leaves two hours after it expired (rounded up to the hour), and not after the retention")
    func expiry() {
        let policy = UploadPolicy()
        let midnight: Int64 = 20_779 * 86_400
        // Valid the whole of 2026-11-21, submitted at 23:00 that day: it expires at midnight, may leave at 03:00.
        let key = Self.key(start: Int32((midnight - 86_400) / 600), hour: midnight / 3600 - 1)
        #expect(!policy.isUploadable(key, now: Date(timeIntervalSince1970: Double(midnight + 3 * 3600 - 1))))
        #expect(policy.isUploadable(key, now: Date(timeIntervalSince1970: Double(midnight + 3 * 3600))))
        // Submitted long after it expired: it may leave in its submission hour.
        let late = Self.key(start: Int32((midnight - 3 * 86_400) / 600), hour: midnight / 3600)
        #expect(policy.isUploadable(late, now: Date(timeIntervalSince1970: Double(midnight))))
        // Started more than 14 days before today: never.
        let old = Self.key(start: Int32((midnight - 15 * 86_400) / 600), hour: midnight / 3600)
        #expect(!policy.isUploadable(old, now: Date(timeIntervalSince1970: Double(midnight + 7200))))
    }

    @Test(
        "batches are equal, at most the maximum, and none when below the minimum",
        arguments: [
            (139, [Int]()), (140, [140]), (4000, [4000]), (4001, [2001, 2000]), (8141, [2714, 2714, 2713]),
        ]
    )
    func batchSizes(count: Int, sizes: [Int]) {
        let keys = (0..<count).map { _ in Self.key(start: 1, hour: 1) }
        let batches = UploadPolicy().batches(of: keys)
        #expect(batches.map(\.count) == sizes)
        let flat = batches.flatMap { $0 }
        #expect(zip(flat, flat.dropFirst()).allSatisfy { $0.keyData.lexicographicallyPrecedes($1.keyData) })
    }

    @Test("a 207: with a 409 or 500, its 201 and 500 keys are not taken; without, all are")
    func multiStatus() {
        let keys = (0..<5).map { _ in Self.key(start: 1, hour: 1) }
        #expect(UploadRun.taken(keys, BatchUploadResponse(created: [0, 1, 2, 3, 4])) == keys)
        #expect(
            UploadRun.taken(keys, BatchUploadResponse(created: [0], conflict: [1], failed: [2])) == [
                keys[1], keys[3], keys[4],
            ]
        )
        #expect(UploadRun.taken(keys, BatchUploadResponse(conflict: [0, 1, 2, 3, 4])) == keys)
    }

    @Test("the 207 body reads the reference's keys")
    func multiStatusBody() throws {
        let body = try JSONDecoder().decode(BatchUploadResponse.self, from: Data(#"{"201":[0,2],"409":[1]}"#.utf8))
        #expect(body == BatchUploadResponse(created: [0, 2], conflict: [1]))
    }

    @Test("the callback id is the hex MD5 of the URL, as the reference registers it")
    func callbackID() {
        #expect(
            CallbackRegistrationTask.id(of: "https://example.org/version/v1/callback")
                == "4693ce5b668f930b274133ad444bc5f3"
        )
    }

    @Test(
        "FEDERATION_CALLBACK_ONLY: serve runs nothing and needs none of the gateway's credentials, which are required otherwise"
    )
    func callbackOnly() throws {
        let base = ["DATABASE_URL": "postgres://test:secret@127.0.0.1:1/test?sslmode=disable"]
        let full = SettingsReader(values: base)
        let configuration = FederationConfiguration(settings: full)
        #expect(!configuration.callbackOnly)
        for name in ["EFGS_CLIENT_CERT_FILE", "FEDERATION_SIGNING_CERT_FILE", "FEDERATION_TRUST_ANCHORS"] {
            #expect(full.problems.contains { $0.hasPrefix(name) }, "\(name) is required")
        }
        #expect(throws: Never.self) { try Federation.refuseCallbackOnly(configuration) }

        let callbacks = SettingsReader(values: base.merging(["FEDERATION_CALLBACK_ONLY": "true"]) { $1 })
        let callbackOnly = FederationConfiguration(settings: callbacks)
        #expect(callbackOnly.callbackOnly)
        #expect(callbacks.problems.isEmpty, "\(callbacks.problems)")
        #expect(callbackOnly.signer == nil)
        #expect(throws: GatewayProtocolError.self) { try Federation.refuseCallbackOnly(callbackOnly) }

        let bad = SettingsReader(values: base.merging(["FEDERATION_CALLBACK_ONLY": "sometimes"]) { $1 })
        _ = FederationConfiguration(settings: bad)
        #expect(bad.problems.contains { $0.hasPrefix("FEDERATION_CALLBACK_ONLY") })
    }

    @Test(
        "FEDERATION_TRUST_ANCHORS: an anchor whose subject names no country is refused; the others are bound to theirs"
    )
    func anchorsNameTheirCountry() throws {
        try #require(OpenSSL.isAvailable, "openssl makes a certificate without a country")
        let french = try TestSigningCertificate.make(country: "FR")
        try OpenSSL.withFolder { folder in
            let made = try OpenSSL.run(
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                    "anchor.key", "-out", "anchor.pem", "-days", "2", "-subj", "/O=EN Test/CN=no country",
                ],
                in: folder
            )
            try #require(made.status == 0, "\(made.output)")
            let withoutCountry = try String(contentsOf: folder.appendingPathComponent("anchor.pem"), encoding: .utf8)
            let file = folder.appendingPathComponent("anchors.pem")
            let base = ["DATABASE_URL": "postgres://test:secret@127.0.0.1:1/test?sslmode=disable"]

            try Data((french.certificatePEM + withoutCountry).utf8).write(to: file)
            let bad = SettingsReader(values: base.merging(["FEDERATION_TRUST_ANCHORS": file.path]) { $1 })
            _ = FederationConfiguration(settings: bad)
            #expect(bad.problems.contains { $0.hasPrefix("FEDERATION_TRUST_ANCHORS") && $0.contains("certificate 2") })

            try Data(french.certificatePEM.utf8).write(to: file)
            let good = SettingsReader(values: base.merging(["FEDERATION_TRUST_ANCHORS": file.path]) { $1 })
            let configuration = FederationConfiguration(settings: good)
            #expect(!good.problems.contains { $0.hasPrefix("FEDERATION_TRUST_ANCHORS") }, "\(good.problems)")
            #expect(
                configuration.batchTrustAnchors == [BatchTrustAnchor(certificate: french.certificate, country: "FR")]
            )
        }
    }
}
