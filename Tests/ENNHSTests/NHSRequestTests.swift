// What an NHS request carries (nhs §1, §3.3–§3.5): the API key header and its check, the app's User-Agent, and
// the value sets of the test path.

import Crypto
import ENNHS
import ENServiceKit
import Foundation
import Synchronization
import Testing

/// `Bearer ` and the Base64 of `text`.
private func bearer(_ text: String) -> String {
    "Bearer " + Data(text.utf8).base64EncodedString()
}

@Suite("NHS API key header")
struct NHSAPIKeyCredentialTests {
    @Test("Bearer base64(name:secret) gives the name and the secret")
    func valid() throws {
        let credential = try #require(NHSAPIKeyCredential(authorization: bearer("device-01:s3cret")))
        #expect(credential.keyName == "device-01")
        #expect(credential.secret == "s3cret")
        #expect(credential == NHSAPIKeyCredential(keyName: "device-01", secret: "s3cret"))
    }

    @Test("the header is split at the first colon, so the secret may hold colons")
    func secretWithColons() throws {
        let credential = try #require(NHSAPIKeyCredential(authorization: bearer("abc_DEF-9:se:cr:et:")))
        #expect(credential.keyName == "abc_DEF-9")
        #expect(credential.secret == "se:cr:et:")
    }

    @Test(
        "names of 6 to 50 letters, digits, underscores or hyphens are accepted",
        arguments: ["abcdef", "ABC123", "a_b-c_", "______", "------", String(repeating: "x", count: 50)]
    )
    func acceptedNames(name: String) {
        #expect(NHSAPIKeyCredential.isValidName(name))
        #expect(NHSAPIKeyCredential(authorization: bearer("\(name):secret"))?.keyName == name)
    }

    @Test(
        "other names are refused",
        arguments: [
            "", "abcde", String(repeating: "x", count: 51), "abc def", "abc.def", "abc+def", "abcdéf", "abcdef/",
            "abc:de",
        ]
    )
    func refusedNames(name: String) {
        #expect(!NHSAPIKeyCredential.isValidName(name))
        // `abc:de` splits into `abc` and `de:secret`: refused for its short name.
        #expect(NHSAPIKeyCredential(authorization: bearer("\(name):secret")) == nil)
    }

    @Test(
        "a blank or missing secret, a header without a colon, not Base64 or not Bearer is refused",
        arguments: [
            bearer("abcdef:"),
            bearer("abcdef:   "),
            bearer("abcdef"),
            bearer(":secret"),
            "Bearer !!not base64!!",
            "Bearer ",
            "Bearer",
            "",
            Data("abcdef:secret".utf8).base64EncodedString(),
            "Basic " + Data("abcdef:secret".utf8).base64EncodedString(),
            "bearer " + Data("abcdef:secret".utf8).base64EncodedString(),
            "Bearer  " + Data("abcdef:secret".utf8).base64EncodedString(),
            "Bearer " + Data([0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x3A, 0xFF, 0xFE]).base64EncodedString(),
        ]
    )
    func refusedHeaders(header: String) {
        #expect(NHSAPIKeyCredential(authorization: header) == nil)
    }

    @Test("authorization is the header the credential is read back from")
    func roundTrip() {
        let credential = NHSAPIKeyCredential(keyName: "lab_npex-1", secret: "a:b c+/=")
        #expect(credential.authorization == bearer("lab_npex-1:a:b c+/="))
        #expect(NHSAPIKeyCredential(authorization: credential.authorization) == credential)
    }

    @Test("a generated key keeps its name and has a fresh Base64URL secret of 32 bytes, without padding")
    func generate() {
        let first = NHSAPIKeyCredential.generate(keyName: "mobile-app")
        let second = NHSAPIKeyCredential.generate(keyName: "mobile-app")
        #expect(first.keyName == "mobile-app")
        #expect(first.secret != second.secret)
        for credential in [first, second] {
            #expect(credential.secret.utf8.count == 43)
            #expect(!credential.secret.contains("+"))
            #expect(!credential.secret.contains("/"))
            #expect(!credential.secret.contains("="))
            let standard =
                credential.secret.replacingOccurrences(of: "-", with: "+")
                .replacingOccurrences(of: "_", with: "/") + "="
            #expect(Data(base64Encoded: standard)?.count == 32)
            #expect(NHSAPIKeyCredential(authorization: credential.authorization) == credential)
        }
    }
}

@Suite("NHS API key verifier")
struct NHSAPIKeyVerifierTests {
    static let key = NHSAPIKeyCredential(keyName: "mobile-key", secret: "correct-secret")

    static func verifier() -> NHSAPIKeyVerifier {
        let store = InMemoryNHSAPIKeyStore()
        store.add(Self.key, api: .mobile)
        return NHSAPIKeyVerifier(store: store)
    }

    @Test("an active key of the API is accepted, also a second time")
    func accepted() async throws {
        let verifier = Self.verifier()
        #expect(try await verifier.verify(Self.key.authorization, api: .mobile))
        #expect(try await verifier.verify(Self.key.authorization, api: .mobile))
    }

    @Test("a wrong secret, an unknown name, another API, no header or a malformed one is refused")
    func refused() async throws {
        let verifier = Self.verifier()
        let wrongSecret = NHSAPIKeyCredential(keyName: "mobile-key", secret: "wrong-secret")
        let unknownName = NHSAPIKeyCredential(keyName: "other-key", secret: "correct-secret")
        #expect(try await !verifier.verify(wrongSecret.authorization, api: .mobile))
        #expect(try await !verifier.verify(unknownName.authorization, api: .mobile))
        #expect(try await !verifier.verify(Self.key.authorization, api: .testResultUpload))
        #expect(try await !verifier.verify(nil, api: .mobile))
        #expect(try await !verifier.verify("Bearer not-base64!", api: .mobile))
        #expect(try await !verifier.verify("", api: .mobile))
    }

    @Test("a key of one API does not open another, also after a success")
    func perAPI() async throws {
        let verifier = Self.verifier()
        #expect(try await verifier.verify(Self.key.authorization, api: .mobile))
        #expect(try await !verifier.verify(Self.key.authorization, api: .testResultUpload))
    }

    @Test(
        "a key added is accepted at once (a name not known reads the keys again); a key revoked is refused after a read"
    )
    func addedAndRevoked() async throws {
        let store = InMemoryNHSAPIKeyStore()
        store.add(Self.key, api: .mobile)
        let verifier = NHSAPIKeyVerifier(store: store, refresh: .seconds(3600), missRefresh: .zero)
        #expect(try await verifier.verify(Self.key.authorization, api: .mobile))
        let added = NHSAPIKeyCredential.generate(keyName: "mobile-next")
        store.add(added, api: .mobile)
        #expect(try await verifier.verify(added.authorization, api: .mobile), "rotation: the new name works at once")
        #expect(try await verifier.verify(Self.key.authorization, api: .mobile), "and the old one still does")
        store.revoke(api: .mobile, keyName: Self.key.keyName)
        try await verifier.reload()
        #expect(try await !verifier.verify(Self.key.authorization, api: .mobile))
        #expect(try await verifier.verify(added.authorization, api: .mobile))
    }

    @Test("a name not known reads the keys again at most once per missRefresh")
    func missesThrottled() async throws {
        let store = CountingKeyStore()
        let verifier = NHSAPIKeyVerifier(store: store, refresh: .seconds(3600), missRefresh: .seconds(3600))
        for index in 0..<50 {
            let unknown = NHSAPIKeyCredential(keyName: "random-\(index)", secret: "s3cret-of-nobody-\(index)")
            #expect(try await !verifier.verify(unknown.authorization, api: .mobile))
        }
        #expect(store.reads.withLock { $0 } == 1, "only the first read: later misses use the keys read")
    }

    @Test("wrong keys cost no check slot: while 200 are checked, the real key is accepted every time")
    func floodDoesNotCrowdOut() async throws {
        let store = InMemoryNHSAPIKeyStore()
        store.add(Self.key, api: .mobile)
        // No slot at all: a key stored as a digest never needs one.
        let verifier = NHSAPIKeyVerifier(store: store, maxRunning: 0)
        let answers = try await withThrowingTaskGroup(of: (real: Bool, valid: Bool).self) { group in
            for index in 0..<200 {
                group.addTask {
                    let random = NHSAPIKeyCredential.generate(
                        keyName: index.isMultiple(of: 2) ? "mobile-key" : "other-\(index)"
                    )
                    return (false, try await verifier.verify(random.authorization, api: .mobile))
                }
                if index.isMultiple(of: 10) {
                    group.addTask { (true, try await verifier.verify(Self.key.authorization, api: .mobile)) }
                }
            }
            return try await group.reduce(into: [(real: Bool, valid: Bool)]()) { $0.append($1) }
        }
        #expect(answers.filter(\.real).count == 20)
        #expect(answers.allSatisfy { $0.real == $0.valid })
    }

    @Test("a key stored as bcrypt is checked with bcrypt once, then held and stored as its SHA-256")
    func bcryptUpgraded() async throws {
        let store = InMemoryNHSAPIKeyStore()
        store.addBcrypt(Self.key, api: .mobile)
        let verifier = NHSAPIKeyVerifier(store: store)
        let wrong = NHSAPIKeyCredential(keyName: Self.key.keyName, secret: "wrong-secret")
        #expect(try await !verifier.verify(wrong.authorization, api: .mobile))
        guard case .bcrypt = store.hash(api: .mobile, keyName: Self.key.keyName) else {
            Issue.record("a wrong secret replaced the bcrypt hash")
            return
        }
        #expect(try await verifier.verify(Self.key.authorization, api: .mobile))
        let digest = Array(SHA256.hash(data: Array(Self.key.secret.utf8)))
        #expect(store.hash(api: .mobile, keyName: Self.key.keyName) == .sha256(digest))
        #expect(try await !verifier.verify(wrong.authorization, api: .mobile))
    }
}

/// A store that counts its reads and knows no key.
private final class CountingKeyStore: NHSAPIKeyStore {
    let reads = Mutex(0)

    func activeKeys() async throws -> [NHSStoredAPIKey] {
        self.reads.withLock { $0 += 1 }
        return []
    }

    func upgrade(api: NHSAPIName, keyName: String, bcrypt: String, sha256: [UInt8]) async throws {}
}

@Suite("NHS User-Agent")
struct NHSUserAgentTests {
    @Test(
        "the version is read from v, a missing patch read as 0",
        arguments: [
            ("p=Android,o=29,v=4.3.0,b=120", [4, 3, 0]),
            ("p=iOS,o=14,v=4.3,b=1", [4, 3, 0]),
            ("v=4.3", [4, 3, 0]),
            ("p=Android,o=30,v=10.12.7,b=4", [10, 12, 7]),
        ]
    )
    func versions(header: String, version: [Int]) {
        #expect(NHSUserAgent(header).version == version)
    }

    @Test(
        "a missing header, a missing v or a malformed v is an unknown version",
        arguments: [
            "p=Android,o=29,v=4.x,b=120", "v=4.x", "v=4", "v=4.3.0.1", "v=", "v=4..3", "v=-4.3", "v=4.3.",
            "p=Android,o=29,b=120", "", "Mozilla/5.0",
        ]
    )
    func unknown(header: String) {
        #expect(NHSUserAgent(header).version == nil)
    }

    @Test("no header at all is an unknown version")
    func missingHeader() {
        #expect(NHSUserAgent(nil).version == nil)
        #expect(NHSUserAgent(nil) == NHSUserAgent("p=iOS,o=14,b=1"))
    }

    @Test(
        "isAtMost(4.3) holds for any 4.3.x and older, not for newer or unknown versions",
        arguments: [
            ("v=4.3", true), ("v=4.3.0", true), ("v=4.3.99", true), ("v=3.9", true), ("v=4.0.1", true),
            ("v=0.1", true), ("v=4.4", false), ("v=4.4.0", false), ("v=5.0", false), ("v=10.0", false),
            ("v=4.x", false), ("", false),
        ]
    )
    func atMost(header: String, expected: Bool) {
        #expect(NHSUserAgent(header).isAtMost(major: 4, minor: 3) == expected)
    }

    @Test("isAtMost of a missing header is false")
    func atMostUnknown() {
        #expect(!NHSUserAgent(nil).isAtMost(major: 4, minor: 3))
        #expect(!NHSUserAgent(nil).isAtMost(major: 99, minor: 99))
    }
}

@Suite("NHS test values")
struct NHSTestValueTests {
    @Test("a testEndDate at midnight UTC is read and written back")
    func endDate() throws {
        let date = try #require(NHSTestEndDate(wire: "2020-08-24T00:00:00Z"))
        #expect(date.day == "2020-08-24")
        #expect(date.wire == "2020-08-24T00:00:00Z")
        #expect(date.description == "2020-08-24T00:00:00Z")
        #expect(NHSTestEndDate(wire: "2020-02-29T00:00:00Z")?.day == "2020-02-29")
    }

    @Test(
        "any other time, an impossible day, a bare date or a zone offset is refused",
        arguments: [
            "2020-08-24T01:00:00Z", "2020-08-24T00:00:01Z", "2020-08-24T00:00:00.000Z", "2020-02-30T00:00:00Z",
            "2021-02-29T00:00:00Z", "2020-13-01T00:00:00Z", "2020-00-10T00:00:00Z", "2020-08-00T00:00:00Z",
            "2020-08-24", "2020-08-24T00:00:00+01:00", "2020-08-24T00:00:00", "2020-8-24T00:00:00Z",
            "20-08-24T00:00:00Z", " 2020-08-24T00:00:00Z", "",
        ]
    )
    func refusedEndDates(text: String) {
        #expect(NHSTestEndDate(wire: text) == nil)
    }

    @Test("the day of a date is its UTC day")
    func endDateFromDate() {
        // 2020-09-13T12:26:40Z
        let date = NHSTestEndDate(date: Date(timeIntervalSince1970: 1_600_000_000))
        #expect(date.day == "2020-09-13")
        #expect(date.wire == "2020-09-13T00:00:00Z")
    }

    @Test(
        "a lab's result: the three values, and INDETERMINATE stored as VOID",
        arguments: [
            ("POSITIVE", NHSTestResult.positive), ("NEGATIVE", NHSTestResult.negative), ("VOID", NHSTestResult.void),
            ("INDETERMINATE", NHSTestResult.void),
        ]
    )
    func labResults(text: String, result: NHSTestResult) {
        #expect(NHSTestResult(lab: text) == result)
    }

    @Test(
        "anything else is refused, lower case included",
        arguments: ["positive", "Positive", "indeterminate", "void", "POSITIVE ", "", "PENDING"]
    )
    func refusedLabResults(text: String) {
        #expect(NHSTestResult(lab: text) == nil)
    }

    @Test("INDETERMINATE is no value of the app's result")
    func indeterminateNotRaw() {
        #expect(NHSTestResult(rawValue: "INDETERMINATE") == nil)
        #expect(NHSTestResult.allCases.map(\.rawValue) == ["POSITIVE", "NEGATIVE", "VOID"])
    }
}
