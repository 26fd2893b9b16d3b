// teleTANs at rest: stored as HMAC-SHA-256 under a key of TELETAN_PEPPER_FILE, redeemable across a rotation, and rows
// written before the pepper (plain SHA-256, no key id) redeemable until they expire.

import Crypto
import ENCrypto
import ENPersistence
import ENTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import VerificationService

/// The key files of these tests: `a` and `b` are two keys (ids and seeds alike).
private let keyA = (id: "a", seed: "pepper-a")
private let keyB = (id: "b", seed: "pepper-b")

/// Runs `body` with the engine of a verification-service whose `TELETAN_PEPPER_FILE` holds `keys` (the first current),
/// on the test database.
private func withEngine(
    pepper keys: [(id: String, seed: String)],
    _ body: (VerificationEngine) async throws -> Void
) async throws {
    let database = try PostgresTestDatabase.require()
    let configuration = try VerificationFixture.configuration(["TELETAN_PEPPER_FILE": try TestKeyFiles.path(keys)])
    let runtime = VerificationFixture.runtime(
        client: database.client,
        configuration: configuration,
        logger: database.logger
    )
    try await withCleanup {
        try await body(runtime.engine)
    } cleanup: {
        try await runtime.dependencies.shutdown()
    }
}

/// `tele_tan`'s rows: hash and key id.
private func storedTeleTANs() async throws -> [(hash: String, keyID: String?)] {
    let database = try PostgresTestDatabase.require()
    let rows = try await database.client.query(
        "SELECT tele_tan_hash, pepper_id FROM tele_tan ORDER BY id",
        logger: database.logger
    )
    var stored: [(hash: String, keyID: String?)] = []
    for try await (hash, keyID) in rows.decode((String, String?).self) { stored.append((hash, keyID)) }
    return stored
}

/// HMAC-SHA-256 of `text` under the test key of `seed`, in hex.
private func hmac(_ text: String, seed: String) -> String {
    Hex.encode(
        HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: SymmetricKey(data: TestKeyFiles.key(seed: seed)))
    )
}

@Suite("teleTANs at rest (peppered hashes)", .postgres(VerificationMigrations.group))
struct TeleTANPepperTests {
    @Test("a teleTAN is stored as HMAC-SHA-256 under the current key with its key id, never as its plain SHA-256")
    func storedPeppered() async throws {
        try await withEngine(pepper: [keyA, keyB]) { engine in
            let teleTAN = try await engine.createTeleTAN(type: .test)

            let stored = try await storedTeleTANs()
            #expect(stored.count == 1)
            #expect(stored.first?.hash != SecretHash.sha256Hex(teleTAN.value))
            #expect(stored.first?.hash == hmac(teleTAN.value, seed: keyA.seed))
            #expect(stored.first?.hash != hmac(teleTAN.value, seed: keyB.seed))
            #expect(stored.first?.keyID == "a")
        }
    }

    @Test("the stored hash depends on the pepper: a service with another key cannot redeem the teleTAN")
    func otherPepperRefused() async throws {
        var issued: TeleTAN?
        try await withEngine(pepper: [keyA]) { engine in
            issued = try await engine.createTeleTAN(type: .event)
        }
        let teleTAN = try #require(issued)

        try await withEngine(pepper: [keyB]) { engine in
            await #expect(throws: VerificationFailure.teleTANNotRedeemable) {
                _ = try await engine.register(.teleTAN(teleTAN))
            }
        }
        try await withEngine(pepper: [keyA]) { engine in
            let token = try await engine.register(.teleTAN(teleTAN))
            #expect(!token.isEmpty)
        }
    }

    @Test("a teleTAN issued under key A is redeemable after the rotation to [B, A]; new ones are stored under B")
    func rotation() async throws {
        var issued: TeleTAN?
        try await withEngine(pepper: [keyA]) { engine in
            issued = try await engine.createTeleTAN(type: .test)
        }
        let teleTAN = try #require(issued)

        try await withEngine(pepper: [keyB, keyA]) { engine in
            let token = try await engine.register(.teleTAN(teleTAN))
            let newer = try await engine.createTeleTAN(type: .test)

            #expect(!token.isEmpty)
            await #expect(throws: VerificationFailure.teleTANNotRedeemable, "a teleTAN is redeemed once") {
                _ = try await engine.register(.teleTAN(teleTAN))
            }
            let stored = try await storedTeleTANs()
            #expect(stored.map(\.keyID) == ["a", "b"])
            #expect(stored.last?.hash == hmac(newer.value, seed: keyB.seed))
        }
        // The session keeps the hash of the row it redeemed (under A), not a plain SHA-256.
        let database = try PostgresTestDatabase.require()
        #expect(
            try await database.count("app_session", where: "tele_tan_hash = '\(hmac(teleTAN.value, seed: keyA.seed))'")
                == 1
        )
    }
}

/// The schema before migration 0002: what a database holds when a release without the pepper wrote to it.
private let beforePepper = MigrationGroup(name: "verification", migrations: [CreateVerification()])

@Suite("teleTANs written before the pepper", .postgres(beforePepper))
struct LegacyTeleTANTests {
    /// Inserts a teleTAN row as the release without the pepper did: the plain SHA-256, valid until `validUntil`.
    private static func insertLegacy(_ teleTAN: String, validUntil: Date) async throws {
        let database = try PostgresTestDatabase.require()
        let hash = SecretHash.sha256Hex(teleTAN)
        try await database.client.query(
            """
            INSERT INTO tele_tan (tele_tan_hash, type, created_at, valid_until)
            VALUES (\(hash), 'EVENT', \(Date()), \(validUntil))
            """,
            logger: database.logger
        )
    }

    @Test(
        "after migration 0002 a legacy teleTAN (plain SHA-256, no key id) is redeemable until it expires, once; an expired one is not"
    )
    func legacyRedeemableUntilExpiry() async throws {
        let database = try PostgresTestDatabase.require()
        var generator = SystemRandomNumberGenerator()
        let live = TeleTAN.generate(using: &generator)
        let expired = TeleTAN.generate(using: &generator)
        try await Self.insertLegacy(live.value, validUntil: Date().addingTimeInterval(86400))
        try await Self.insertLegacy(expired.value, validUntil: Date().addingTimeInterval(-60))

        let applied = try await DatabaseMigrator(group: VerificationMigrations.group)
            .migrate(client: database.client, logger: database.logger)

        #expect(applied.first == "0002_pepper_teletans")
        try await withEngine(pepper: [keyA]) { engine in
            let token = try await engine.register(.teleTAN(live))
            #expect(!token.isEmpty)
            await #expect(throws: VerificationFailure.teleTANNotRedeemable, "a teleTAN is redeemed once") {
                _ = try await engine.register(.teleTAN(live))
            }
            await #expect(throws: VerificationFailure.teleTANNotRedeemable) {
                _ = try await engine.register(.teleTAN(expired))
            }
        }
        #expect(try await database.count("tele_tan", where: "pepper_id IS NULL") == 2, "legacy rows keep no key id")
    }
}
