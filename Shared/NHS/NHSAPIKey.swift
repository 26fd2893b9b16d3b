// NHS API keys (nhs §1): `Authorization: Bearer base64(keyName:secret)`, the secret kept as its SHA-256 per API.

import Crypto
import ENCrypto
import ENPersistence
import ENServiceKit
package import Foundation
import HummingbirdBcrypt
package import Logging
import NIOPosix
package import PostgresNIO
import Synchronization

/// The APIs of the NHS family a key can be issued for (the reference's `ApiName`); each route checks one.
package enum NHSAPIName: String, Sendable, CaseIterable {
    /// Every app-facing route of the family.
    case mobile
    /// The test labs' and the token API's uploads.
    case testResultUpload
    /// The isolation payment website's token checks (verify, consume).
    case isolationPayment
    /// The uploads of the risky venues' list.
    case highRiskVenuesCodeUpload
    /// The uploads of the risky post districts' tiers.
    case highRiskPostCodeUpload
}

/// What an `Authorization` header of the NHS family carries.
package struct NHSAPIKeyCredential: Sendable, Equatable {
    package let keyName: String
    package let secret: String

    package init(keyName: String, secret: String) {
        self.keyName = keyName
        self.secret = secret
    }

    /// `Bearer <base64 of keyName:secret>`, split at the first colon; both parts non-blank and the name of 6 to 50
    /// word characters or hyphens. `nil` for anything else.
    package init?(authorization: String) {
        guard authorization.hasPrefix("Bearer "),
            let decoded = Data(base64Encoded: String(authorization.dropFirst(7))),
            let text = String(data: decoded, encoding: .utf8),
            let colon = text.firstIndex(of: ":")
        else { return nil }
        let name = String(text[..<colon])
        let secret = String(text[text.index(after: colon)...])
        // A secret with a control character is no key's (bcrypt would stop at a NUL), refused before any check.
        guard Self.isValidName(name), !secret.trimmingCharacters(in: .whitespaces).isEmpty, SecretText.isClean(secret)
        else { return nil }
        self.init(keyName: name, secret: secret)
    }

    /// The header value an API user sends.
    package var authorization: String {
        "Bearer " + Data("\(self.keyName):\(self.secret)".utf8).base64EncodedString()
    }

    /// 6 to 50 characters of letters, digits, `_` and `-` (the reference's `[\w_-]{6,50}`, ASCII only).
    package static func isValidName(_ name: String) -> Bool {
        (6...50).contains(name.utf8.count)
            && name.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == 0x5F || byte == 0x2D
            }
    }

    /// A new key: 32 random bytes as the secret, Base64URL without padding.
    package static func generate(keyName: String) -> NHSAPIKeyCredential {
        let secret = SymmetricKey(size: .bits256).withUnsafeBytes { Base64URL.encode($0) }
        return NHSAPIKeyCredential(keyName: keyName, secret: secret)
    }
}

/// How a stored key's secret is checked.
package enum NHSAPIKeyHash: Sendable, Equatable {
    /// The SHA-256 of the secret, what `api-key add` stores. A secret is 128 random bits or more (32 bytes of
    /// `openssl rand -hex` at least, or the 256 bits `add` makes), so its unkeyed digest cannot be searched and needs
    /// no pepper or slow hash.
    case sha256([UInt8])
    /// A bcrypt hash that a key added before the digests has: checked with bcrypt once, then replaced by the SHA-256
    /// of the secret that matched it.
    case bcrypt(String)
}

/// An active key as the store holds it.
package struct NHSStoredAPIKey: Sendable, Equatable {
    package let api: NHSAPIName
    package let keyName: String
    package let hash: NHSAPIKeyHash

    package init(api: NHSAPIName, keyName: String, hash: NHSAPIKeyHash) {
        self.api = api
        self.keyName = keyName
        self.hash = hash
    }
}

/// Where a service's API keys are kept.
package protocol NHSAPIKeyStore: Sendable {
    /// Every active key.
    func activeKeys() async throws -> [NHSStoredAPIKey]
    /// Replaces the bcrypt hash `bcrypt` of the active key `keyName` of `api` by `sha256`; nothing when the key has
    /// changed since (another replica upgraded it, an operator replaced or revoked it).
    func upgrade(api: NHSAPIName, keyName: String, bcrypt: String, sha256: [UInt8]) async throws
}

/// Checks an `Authorization` header against the active keys, which it holds in memory: the SHA-256 of the secret
/// compared in constant time with the stored one, so a wrong key costs a hash and a dictionary lookup and no check
/// waits for another. The keys are read again every `refresh` in the background (requests go on with the keys
/// they have; a store that is down leaves the last keys in force), and when a request names a key it does not know,
/// at most once per `missRefresh`, so a key just added works within that. Only the first read is awaited: a store
/// that is down then is a 503. A key name it does not know is compared with a decoy digest, so its answer takes as
/// long as a wrong secret's.
///
/// A key stored as bcrypt is checked with bcrypt on NIO's blocking pool, at most `maxRunning` such checks at once
/// (beyond that `NHSAPIKeyBusy`, a 503) and one per distinct header; the first success stores the secret's SHA-256
/// in its place, so that key needs no bcrypt again.
package final class NHSAPIKeyVerifier: Sendable {
    private struct Keys: Sendable {
        var hashes: [String: NHSAPIKeyHash]
        var read: ContinuousClock.Instant
    }

    private struct State: Sendable {
        var keys: Keys?
        var reading: Task<Keys, any Error>?
        var lastAttempt: ContinuousClock.Instant?
    }

    private let store: any NHSAPIKeyStore
    private let refresh: Duration
    private let missRefresh: Duration
    private let state = Mutex(State())
    private let decoy = Array(SHA256.hash(data: Array("decoy-nhs-api-key-secret".utf8)))
    private let legacyChecks = Mutex<[String: Task<Bool, any Error>]>([:])
    private let legacyRunning = Atomic<Int>(0)
    private let maxRunning: Int

    /// The cost of the bcrypt hashes the verifier still checks (keys added before the digests).
    package static let bcryptCost: UInt8 = 10

    package init(
        store: any NHSAPIKeyStore,
        refresh: Duration = .seconds(10),
        missRefresh: Duration = .seconds(1),
        maxRunning: Int = 4
    ) {
        self.store = store
        self.refresh = refresh
        self.missRefresh = missRefresh
        self.maxRunning = maxRunning
    }

    /// Whether `authorization` holds an active key of `api`.
    package func verify(_ authorization: String?, api: NHSAPIName) async throws -> Bool {
        guard let authorization, let credential = NHSAPIKeyCredential(authorization: authorization) else {
            return false
        }
        let digest = Array(SHA256.hash(data: Array(credential.secret.utf8)))
        let name = Self.name(api, credential.keyName)
        var stored = try await self.keys(missed: false)[name]
        if stored == nil { stored = try await self.keys(missed: true)[name] }
        switch stored {
        case .sha256(let expected):
            return ConstantTime.equals(expected, digest)
        case .bcrypt(let hash):
            return try await self.legacy(credential, api: api, hash: hash, digest: digest, name: name)
        case nil:
            _ = ConstantTime.equals(self.decoy, digest)
            return false
        }
    }

    /// Reads the keys again now and waits for them (after a key was added or revoked, in tests).
    package func reload() async throws {
        let reading = self.state.withLock { state in self.startReading(&state, now: .now) }
        _ = try await reading.value
    }

    private static func name(_ api: NHSAPIName, _ keyName: String) -> String { api.rawValue + ":" + keyName }

    private enum Next {
        case have([String: NHSAPIKeyHash])
        case wait(Task<Keys, any Error>)
    }

    /// The keys in memory, read (and waited for) when there are none yet. A request for a known key never waits: a
    /// due read runs in the background. With `missed` (the key was not among them) a read is waited for when one
    /// runs, or when the keys and the last attempt are older than `missRefresh`.
    private func keys(missed: Bool) async throws -> [String: NHSAPIKeyHash] {
        let now = ContinuousClock.now
        let next: Next = self.state.withLock { state in
            guard let keys = state.keys else { return .wait(state.reading ?? self.startReading(&state, now: now)) }
            let age = keys.read.duration(to: now)
            let sinceAttempt = state.lastAttempt.map { $0.duration(to: now) } ?? age
            if missed {
                if let reading = state.reading { return .wait(reading) }
                guard age >= self.missRefresh, sinceAttempt >= self.missRefresh else { return .have(keys.hashes) }
                return .wait(self.startReading(&state, now: now))
            }
            if age >= self.refresh, state.reading == nil, sinceAttempt >= self.missRefresh {
                _ = self.startReading(&state, now: now)
            }
            return .have(keys.hashes)
        }
        switch next {
        case .have(let keys):
            return keys
        case .wait(let reading):
            do {
                return try await reading.value.hashes
            } catch {
                // A store that is down after the first read leaves the keys read before in force.
                if let keys = self.state.withLock({ $0.keys?.hashes }) { return keys }
                throw error
            }
        }
    }

    private func startReading(_ state: inout State, now: ContinuousClock.Instant) -> Task<Keys, any Error> {
        let task = Task {
            defer { self.state.withLock { $0.reading = nil } }
            let stored = try await self.store.activeKeys()
            var hashes: [String: NHSAPIKeyHash] = [:]
            for key in stored { hashes[Self.name(key.api, key.keyName)] = key.hash }
            let keys = Keys(hashes: hashes, read: now)
            self.state.withLock { state in
                if (state.keys?.read ?? now) <= now { state.keys = keys }
            }
            return keys
        }
        state.lastAttempt = now
        state.reading = task
        return task
    }

    private func legacy(
        _ credential: NHSAPIKeyCredential,
        api: NHSAPIName,
        hash: String,
        digest: [UInt8],
        name: String
    ) async throws -> Bool {
        // Requests with the same header wait for the one check that runs for it.
        let memo = name + ":" + Hex.encode(digest)
        let check = self.legacyChecks.withLock { checks in
            if let running = checks[memo] { return running }
            let check = Task {
                defer {
                    self.legacyRunning.subtract(1, ordering: .relaxed)
                    self.legacyChecks.withLock { $0[memo] = nil }
                }
                guard self.legacyRunning.add(1, ordering: .relaxed).newValue <= self.maxRunning else {
                    throw NHSAPIKeyBusy()
                }
                let secret = credential.secret
                let valid = try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(secret, hash: hash) }
                if valid {
                    // A store that is down keeps the bcrypt hash: this replica upgrades its keys in memory and
                    // the store is upgraded at the key's next success after a read.
                    try? await self.store.upgrade(api: api, keyName: credential.keyName, bcrypt: hash, sha256: digest)
                    self.state.withLock { state in
                        if state.keys?.hashes[name] == .bcrypt(hash) { state.keys?.hashes[name] = .sha256(digest) }
                    }
                }
                return valid
            }
            checks[memo] = check
            return check
        }
        return try await check.value
    }
}

/// Too many bcrypt checks are running; the request is answered 503.
package struct NHSAPIKeyBusy: Error {}

/// The statements of a service's keys table, `nhs_api_key`: each service's migration group creates it under its next
/// number (`CreateNHSAPIKey` in the service's `Persistence/Migrations`) and adds the secrets' digests under a later
/// one (`StoreNHSAPIKeyDigests`).
package enum NHSAPIKeyTable {
    package static let statements = [
        """
        CREATE TABLE IF NOT EXISTS nhs_api_key (
            api_name text NOT NULL CHECK (api_name ~ '^[A-Za-z]{1,40}$'),
            key_name text NOT NULL CHECK (key_name ~ '^[A-Za-z0-9_-]{6,50}$'),
            bcrypt_hash text NOT NULL CHECK (bcrypt_hash ~ '^\\$2[aby]\\$'),
            created_at timestamptz NOT NULL,
            revoked_at timestamptz,
            PRIMARY KEY (api_name, key_name)
        )
        """
    ]

    /// `secret_sha256`, the lowercase hex SHA-256 of a key's secret, which new keys have instead of `bcrypt_hash`;
    /// every row has exactly one of the two. Like the table's creation, the statement may run twice on one database
    /// (a test database migrated with two services' groups) and leaves the same table each time.
    package static let digestStatements = [
        """
        ALTER TABLE nhs_api_key
            ALTER COLUMN bcrypt_hash DROP NOT NULL,
            ADD COLUMN IF NOT EXISTS secret_sha256 text CHECK (secret_sha256 ~ '^[0-9a-f]{64}$'),
            DROP CONSTRAINT IF EXISTS nhs_api_key_one_hash,
            ADD CONSTRAINT nhs_api_key_one_hash CHECK ((bcrypt_hash IS NULL) <> (secret_sha256 IS NULL))
        """
    ]
}

/// The keys in the service's database (`nhs_api_key`).
package struct PostgresNHSAPIKeyStore: NHSAPIKeyStore {
    let database: DatabasePool
    let logger: Logger

    package init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.defaultLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger
    }

    package func activeKeys() async throws -> [NHSStoredAPIKey] {
        let rows = try await self.database.query(
            "SELECT api_name, key_name, secret_sha256, bcrypt_hash FROM nhs_api_key WHERE revoked_at IS NULL",
            logger: self.logger
        )
        var keys: [NHSStoredAPIKey] = []
        for row in rows {
            let (apiName, keyName, digest, bcrypt) = try row.decode((String, String, String?, String?).self)
            // A row of an API this build does not serve, or without a usable hash, opens nothing.
            guard let api = NHSAPIName(rawValue: apiName) else { continue }
            if let digest, let bytes = Hex.decode(digest), bytes.count == 32 {
                keys.append(NHSStoredAPIKey(api: api, keyName: keyName, hash: .sha256(bytes)))
            } else if let bcrypt {
                keys.append(NHSStoredAPIKey(api: api, keyName: keyName, hash: .bcrypt(bcrypt)))
            }
        }
        return keys
    }

    package func upgrade(api: NHSAPIName, keyName: String, bcrypt: String, sha256: [UInt8]) async throws {
        let digest = Hex.encode(sha256)
        try await self.database.query(
            """
            UPDATE nhs_api_key SET secret_sha256 = \(digest), bcrypt_hash = NULL
            WHERE api_name = \(api.rawValue) AND key_name = \(keyName) AND bcrypt_hash = \(bcrypt) AND revoked_at IS NULL
            """,
            logger: self.logger
        )
    }

    /// Adds (or replaces, reactivating) the key `credential.keyName` of `api` with the SHA-256 of its secret.
    package func add(_ credential: NHSAPIKeyCredential, api: NHSAPIName, now: Date) async throws {
        let name = credential.keyName
        let digest = SecretHash.sha256Hex(credential.secret)
        try await self.database.query(
            """
            INSERT INTO nhs_api_key (api_name, key_name, secret_sha256, created_at) VALUES (\(api.rawValue), \(name), \(digest), \(now))
            ON CONFLICT (api_name, key_name) DO UPDATE
            SET secret_sha256 = EXCLUDED.secret_sha256, bcrypt_hash = NULL, created_at = EXCLUDED.created_at, revoked_at = NULL
            """,
            logger: self.logger
        )
    }

    /// Revokes the key; `false` when there is no active key of that name.
    package func revoke(api: NHSAPIName, keyName: String, now: Date) async throws -> Bool {
        let rows = try await self.database.query(
            """
            UPDATE nhs_api_key SET revoked_at = \(now)
            WHERE api_name = \(api.rawValue) AND key_name = \(keyName) AND revoked_at IS NULL RETURNING key_name
            """,
            logger: self.logger
        )
        return !rows.isEmpty
    }

    /// Every key: API, name, creation time and revocation time.
    package func all() async throws -> [(api: String, name: String, created: Date, revoked: Date?)] {
        let rows = try await self.database.query(
            "SELECT api_name, key_name, created_at, revoked_at FROM nhs_api_key ORDER BY api_name, key_name",
            logger: self.logger
        )
        return try rows.map { row in
            let (api, name, created, revoked) = try row.decode((String, String, Date, Date?).self)
            return (api, name, created, revoked)
        }
    }
}

/// Keys in memory, for route tests.
package final class InMemoryNHSAPIKeyStore: NHSAPIKeyStore {
    private let keys = Mutex<[String: NHSStoredAPIKey]>([:])

    package init() {}

    /// Adds `credential` as a key of `api`, stored as the SHA-256 of its secret.
    package func add(_ credential: NHSAPIKeyCredential, api: NHSAPIName) {
        let digest = Array(SHA256.hash(data: Array(credential.secret.utf8)))
        self.put(NHSStoredAPIKey(api: api, keyName: credential.keyName, hash: .sha256(digest)))
    }

    /// Adds `credential` as a key of `api` stored as a bcrypt hash (at the lowest cost, for speed), as keys added
    /// before the digests are.
    package func addBcrypt(_ credential: NHSAPIKeyCredential, api: NHSAPIName) {
        let hash = Bcrypt.hash(credential.secret, cost: 4)
        self.put(NHSStoredAPIKey(api: api, keyName: credential.keyName, hash: .bcrypt(hash)))
    }

    /// Removes the key `keyName` of `api`.
    package func revoke(api: NHSAPIName, keyName: String) {
        self.keys.withLock { $0[api.rawValue + ":" + keyName] = nil }
    }

    /// The stored form of the key `keyName` of `api`.
    package func hash(api: NHSAPIName, keyName: String) -> NHSAPIKeyHash? {
        self.keys.withLock { $0[api.rawValue + ":" + keyName]?.hash }
    }

    package func activeKeys() async throws -> [NHSStoredAPIKey] {
        self.keys.withLock { Array($0.values) }
    }

    package func upgrade(api: NHSAPIName, keyName: String, bcrypt: String, sha256: [UInt8]) async throws {
        self.keys.withLock { keys in
            let name = api.rawValue + ":" + keyName
            guard keys[name]?.hash == .bcrypt(bcrypt) else { return }
            keys[name] = NHSStoredAPIKey(api: api, keyName: keyName, hash: .sha256(sha256))
        }
    }

    private func put(_ key: NHSStoredAPIKey) {
        self.keys.withLock { $0[key.api.rawValue + ":" + key.keyName] = key }
    }
}
