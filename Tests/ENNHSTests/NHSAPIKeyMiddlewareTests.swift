// The NHS API-key middleware (nhs §1): 403 without a valid key, 503 when the key cannot be checked.

import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// A key store whose database is down, or goes down after `readsBeforeDown` reads.
private final class FailingKeyStore: NHSAPIKeyStore {
    struct Down: Error {}
    let keys = TestNHS.keyStore()
    let readsLeft: Mutex<Int>

    init(readsBeforeDown: Int = 0) { self.readsLeft = Mutex(readsBeforeDown) }

    func activeKeys() async throws -> [NHSStoredAPIKey] {
        guard
            self.readsLeft.withLock({ left in
                defer { left -= 1 }
                return left > 0
            })
        else { throw Down() }
        return try await self.keys.activeKeys()
    }

    func upgrade(api: NHSAPIName, keyName: String, bcrypt: String, sha256: [UInt8]) async throws { throw Down() }
}

@Suite("NHS API-key middleware")
struct NHSAPIKeyMiddlewareTests {
    static func app(_ verifier: NHSAPIKeyVerifier) -> some ApplicationProtocol {
        let router = Router()
        router.group("nhs").add(middleware: NHSAPIKeyMiddleware(api: .mobile, verifier: verifier))
            .post("call") { _, _ in "done" }
        return Application(router: router)
    }

    static func status(_ app: some ApplicationProtocol, authorization: String?) async throws -> HTTPResponse.Status {
        var fields: HTTPFields = [:]
        fields[.authorization] = authorization
        let headers = fields
        return try await app.test(.router) { client in
            try await client.execute(uri: "/nhs/call", method: .post, headers: headers).status
        }
    }

    @Test("a valid key passes; no key or a wrong one is 403")
    func keys() async throws {
        let app = Self.app(NHSAPIKeyVerifier(store: TestNHS.keyStore()))
        #expect(try await Self.status(app, authorization: TestNHS.mobile.authorization) == .ok)
        #expect(try await Self.status(app, authorization: nil) == .forbidden)
        #expect(try await Self.status(app, authorization: TestNHS.lab.authorization) == .forbidden)
    }

    @Test("a secret followed by a NUL byte, or holding any control character, is not the secret")
    func controlCharacters() async throws {
        let verifier = NHSAPIKeyVerifier(store: TestNHS.keyStore())
        let app = Self.app(verifier)
        for suffix in ["\0anything", "\0", "\u{1}", "\n", "\u{7F}"] {
            let forged = NHSAPIKeyCredential(keyName: TestNHS.mobile.keyName, secret: TestNHS.mobile.secret + suffix)
            #expect(
                try await Self.status(app, authorization: forged.authorization) == .forbidden,
                "suffix \(suffix.debugDescription)"
            )
            #expect(try await verifier.verify(forged.authorization, api: .mobile) == false)
        }
        #expect(try await Self.status(app, authorization: TestNHS.mobile.authorization) == .ok)
    }

    @Test("a key store down at the first read, or no free bcrypt slot for a bcrypt key, is 503, not a 500 or a 403")
    func unavailable() async throws {
        let down = Self.app(NHSAPIKeyVerifier(store: FailingKeyStore()))
        #expect(try await Self.status(down, authorization: TestNHS.mobile.authorization) == .serviceUnavailable)
        let bcrypt = InMemoryNHSAPIKeyStore()
        bcrypt.addBcrypt(TestNHS.mobile, api: .mobile)
        let busy = Self.app(NHSAPIKeyVerifier(store: bcrypt, maxRunning: 0))
        #expect(try await Self.status(busy, authorization: TestNHS.mobile.authorization) == .serviceUnavailable)
        await #expect(throws: NHSAPIKeyBusy.self) {
            try await NHSAPIKeyVerifier(store: bcrypt, maxRunning: 0).verify(TestNHS.mobile.authorization, api: .mobile)
        }
        let digests = Self.app(NHSAPIKeyVerifier(store: TestNHS.keyStore(), maxRunning: 0))
        #expect(try await Self.status(digests, authorization: TestNHS.mobile.authorization) == .ok)
    }

    @Test("a key store that goes down after the first read leaves the keys read in force")
    func storeDownLater() async throws {
        let verifier = NHSAPIKeyVerifier(
            store: FailingKeyStore(readsBeforeDown: 1),
            refresh: .zero,
            missRefresh: .zero
        )
        let app = Self.app(verifier)
        for _ in 0..<3 {
            #expect(try await Self.status(app, authorization: TestNHS.mobile.authorization) == .ok)
            #expect(try await Self.status(app, authorization: TestNHS.lab.authorization) == .forbidden)
        }
        await #expect(throws: FailingKeyStore.Down.self) { try await verifier.reload() }
        #expect(try await Self.status(app, authorization: TestNHS.mobile.authorization) == .ok)
    }
}
