// The officers' TOTP secrets at rest: sealed with AES-256-GCM under a key of TOTP_KEY_FILE, bound to the officer, secrets
// in clear (rows written before sealing) sealed by the start-up pass or at the next login, and keys rotatable.

import ENCrypto
import ENPersistence
import ENTestSupport
import Foundation
import NIOCore
import PostgresNIO
import Testing

@testable import PortalService

/// The columns of the officer's secret as the database holds them.
private struct SecretColumns {
    var clear: [UInt8]?
    var keyID: String?
    var sealed: [UInt8]?
}

/// The secret columns of the officer `username`.
private func secretColumns(_ username: String) async throws -> SecretColumns {
    let database = try PostgresTestDatabase.require()
    let rows = try await database.client.query(
        "SELECT totp_secret, totp_key_id, totp_sealed FROM officer WHERE username = \(username)",
        logger: database.logger
    )
    var columns: SecretColumns?
    for try await (clear, keyID, sealed) in rows.decode((ByteBuffer?, String?, ByteBuffer?).self) {
        columns = SecretColumns(
            clear: clear.map { Array($0.readableBytesView) },
            keyID: keyID,
            sealed: sealed.map { Array($0.readableBytesView) }
        )
    }
    return try #require(columns, "no officer \(username)")
}

/// Whether `bytes` contains `part` anywhere.
private func contains(_ bytes: [UInt8], _ part: [UInt8]) -> Bool {
    guard bytes.count >= part.count else { return false }
    return (0...(bytes.count - part.count)).contains { Array(bytes[$0..<($0 + part.count)]) == part }
}

/// The code of `secret` at the harness's clock.
private func code(_ secret: [UInt8], _ harness: PortalHarness) -> String {
    TOTP(secret: secret).code(step: TOTP.step(at: harness.clock.now))
}

/// Key files of these tests: `a` and `b` (ids and seeds alike).
private let keyA = (id: "a", seed: "totp-a")
private let keyB = (id: "b", seed: "totp-b")

/// The secret of `username` as stored in the test database, opened with key `a`.
private func secretUnderA(_ username: String) async throws -> [UInt8] {
    let database = try PostgresTestDatabase.require()
    let officer = try await PostgresPortalRepository(client: database.client, logger: database.logger)
        .officer(named: username)
    return try TOTPSecretBox(keys: try TestKeyFiles.ring([keyA])).open(
        try #require(officer).totpSecret,
        username: username
    )
}

@Suite("TOTP secrets at rest", .postgres(PortalMigrations.group))
struct TOTPSecretAtRestTests {
    @Test("an officer's row holds the secret only sealed, under the current key id, and login with its code works")
    func sealedAtRest() async throws {
        try await PortalHarness.run { harness in
            let officer = try await harness.addOfficer("officer1", roles: ["c19hotline"])
            let secret = try harness.engine.totpBox.open(officer.totpSecret, username: "officer1")

            let columns = try await secretColumns("officer1")
            #expect(columns.clear == nil, "no secret in clear")
            #expect(columns.keyID == "test-1")
            let sealed = try #require(columns.sealed)
            #expect(sealed.count == 48)
            #expect(!contains(sealed, secret))
            try await harness.browse { browser in
                try await harness.signIn(browser, officer)
            }
            #expect(try await harness.actions(of: "officer1") == ["password_accepted", "login_succeeded"])
        }
    }

    @Test("a sealed secret opens only for its own officer and with its own key")
    func boundToOfficerAndKey() throws {
        let box = TOTPSecretBox(keys: try TestKeyFiles.ring([keyA]))
        let other = TOTPSecretBox(keys: try TestKeyFiles.ring([(id: "a", seed: "another key")]))
        let secret = TOTP.random().secret

        let sealed = try box.seal(secret, username: "anna")

        #expect(try box.open(sealed, username: "anna") == secret)
        #expect(throws: TOTPSecretError.authenticationFailed(keyID: "a")) { try box.open(sealed, username: "bert") }
        #expect(throws: TOTPSecretError.authenticationFailed(keyID: "a")) { try other.open(sealed, username: "anna") }
        #expect(throws: TOTPSecretError.unknownKey("a")) {
            try TOTPSecretBox(keys: try TestKeyFiles.ring([keyB])).open(sealed, username: "anna")
        }
        #expect(try box.seal(secret, username: "anna") != sealed, "a new nonce each time")
    }

    @Test("after the rotation to [B, A] a secret sealed under A still logs in, and is sealed anew under B")
    func rotation() async throws {
        try await PortalHarness.run(["TOTP_KEY_FILE": try TestKeyFiles.path([keyA])]) { harness in
            try await harness.addOfficer("officer1", roles: ["c19hotline"])
        }
        let secret = try await secretUnderA("officer1")

        try await PortalHarness.run(["TOTP_KEY_FILE": try TestKeyFiles.path([keyB, keyA])]) { harness in
            try await harness.browse { browser in
                try await browser.signIn("officer1", password: PortalHarness.password, code: code(secret, harness))
            }
            let columns = try await secretColumns("officer1")
            #expect(columns.keyID == "b")
            let resealed = try #require(try await harness.repository.officer(named: "officer1")).totpSecret
            #expect(try harness.engine.totpBox.open(resealed, username: "officer1") == secret)
        }
        // Now B alone opens it: A can be dropped.
        try await PortalHarness.run(["TOTP_KEY_FILE": try TestKeyFiles.path([keyB])]) { harness in
            harness.clock.advance(by: 60)
            try await harness.browse { browser in
                try await browser.signIn("officer1", password: PortalHarness.password, code: code(secret, harness))
            }
        }
    }

    @Test(
        "a secret no configured key opens refuses the login without counting a guess, is audited and logged without the secret"
    )
    func unopenable() async throws {
        try await PortalHarness.run(["TOTP_KEY_FILE": try TestKeyFiles.path([keyA])]) { harness in
            try await harness.addOfficer("officer1", roles: ["c19hotline"])
        }
        let secret = try await secretUnderA("officer1")

        try await PortalHarness.run(["TOTP_KEY_FILE": try TestKeyFiles.path([keyB])]) { harness in
            try await harness.browse { browser in
                _ = try await browser.submitPassword("officer1", PortalHarness.password)
                _ = try await browser.get("/totp")
                let reply = try await browser.post("/totp", ["code": code(secret, harness)])
                #expect(reply.location != "/")
            }
            let sealing = try await harness.engine.sealTOTPSecrets()

            #expect(sealing == TOTPSealing(sealed: 0, unopenable: 1))
            #expect(
                try await harness.repository.officer(named: "officer1")?.failedLogins == 1,
                "the password step only"
            )
            #expect(try await harness.actions(of: "officer1") == ["password_accepted", "totp_unavailable"])
            #expect(harness.logText.contains("TOTP_KEY_FILE has no key 'a'"))
            #expect(!harness.logText.contains(Base32.encode(secret)))
            #expect(try await secretColumns("officer1").keyID == "a", "left as it was")
        }
    }
}

/// The schema before migration 0002: what a database holds when a release without sealing wrote to it.
private let beforeSealing = MigrationGroup(name: "portal", migrations: [CreatePortal()])

@Suite("TOTP secrets written in clear", .postgres(beforeSealing))
struct LegacyTOTPSecretTests {
    /// An officer as the release without sealing added it (its password `PortalHarness.password`), after which
    /// migration 0002 is applied; returns the secret.
    private static func addLegacyOfficer(_ username: String) async throws -> [UInt8] {
        let database = try PostgresTestDatabase.require()
        let secret = TOTP.random().secret
        let hash = try await PasswordHasher.hash(PortalHarness.password, cost: 4)
        try await database.client.query(
            """
            INSERT INTO officer (username, password_hash, roles, totp_secret, created_at)
            VALUES (\(username), \(hash), \(["c19hotline"]), \(ByteBuffer(bytes: secret)), \(Date()))
            """,
            logger: database.logger
        )
        let applied = try await DatabaseMigrator(group: PortalMigrations.group)
            .migrate(client: database.client, logger: database.logger)
        try #require(
            applied == ["0002_seal_totp_secrets", "0003_create_nhs_api_key", "0004_store_nhs_api_key_digests"]
        )
        #expect(try await secretColumns(username).clear == secret, "the migration itself cannot seal")
        return secret
    }

    @Test("the start-up pass seals a secret in clear; the officer logs in with the same authenticator")
    func sealedByPass() async throws {
        let secret = try await Self.addLegacyOfficer("officer1")

        try await PortalHarness.run { harness in
            let first = try await harness.engine.sealTOTPSecrets()
            let second = try await harness.engine.sealTOTPSecrets()
            let columns = try await secretColumns("officer1")
            try await harness.browse { browser in
                try await browser.signIn("officer1", password: PortalHarness.password, code: code(secret, harness))
            }

            #expect(first == TOTPSealing(sealed: 1, unopenable: 0))
            #expect(second == TOTPSealing())
            #expect(columns.clear == nil)
            #expect(columns.keyID == "test-1")
            #expect(!contains(try #require(columns.sealed), secret))
        }
    }

    @Test("without the pass, the first login seals a secret in clear")
    func sealedOnFirstUse() async throws {
        let secret = try await Self.addLegacyOfficer("officer1")

        try await PortalHarness.run { harness in
            try await harness.browse { browser in
                try await browser.signIn("officer1", password: PortalHarness.password, code: code(secret, harness))
            }
            let columns = try await secretColumns("officer1")

            #expect(columns.clear == nil)
            #expect(columns.keyID == "test-1")
            let stored = try #require(try await harness.repository.officer(named: "officer1")).totpSecret
            #expect(try harness.engine.totpBox.open(stored, username: "officer1") == secret)
        }
    }
}
