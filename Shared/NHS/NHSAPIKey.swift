// NHS API keys (nhs §1): `Authorization: Bearer base64(keyName:secret)`, the secret kept as a bcrypt hash per API.

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

/// Where the bcrypt hashes of a service's API keys are kept.
package protocol NHSAPIKeyStore: Sendable {
    /// The bcrypt hash of the active key `keyName` of `api`, or `nil`.
    func bcryptHash(api: NHSAPIName, keyName: String) async throws -> String?
}

/// Checks an `Authorization` header against the store: bcrypt on NIO's blocking pool, successes remembered for a
/// minute (the reference caches its secret lookups as long) so a phone's requests do not each cost a bcrypt. An
/// unknown key name is checked against a decoy hash, so its answer takes as long as a wrong secret's. At most
/// `maxRunning` checks run at once; beyond that `NHSAPIKeyBusy` is thrown at once, so a flood of wrong keys cannot
/// queue bcrypt work without bound (the apps' one shared `mobile` key is remembered and needs none).
package final class NHSAPIKeyVerifier: Sendable {
    private let store: any NHSAPIKeyStore
    private let decoy: String
    private let remembered = Mutex<[String: ContinuousClock.Instant]>([:])
    private let memory: Duration
    private let running = Atomic<Int>(0)
    private let checks = Mutex<[String: Task<Bool, any Error>]>([:])
    private let maxRunning: Int

    package static let bcryptCost: UInt8 = 10

    package init(store: any NHSAPIKeyStore, memory: Duration = .seconds(60), maxRunning: Int = 4) {
        self.store = store
        self.memory = memory
        self.maxRunning = maxRunning
        self.decoy = Bcrypt.hash("decoy-nhs-api-key-secret", cost: Self.bcryptCost)
    }

    /// Whether `authorization` holds an active key of `api`.
    package func verify(_ authorization: String?, api: NHSAPIName) async throws -> Bool {
        guard let authorization, let credential = NHSAPIKeyCredential(authorization: authorization) else {
            return false
        }
        let memoKey = api.rawValue + ":" + SecretHash.sha256Hex(authorization)
        if let until = self.remembered.withLock({ $0[memoKey] }), until > ContinuousClock.now { return true }
        // Requests with the same header wait for the one check that runs for it (a lab's parallel uploads, the apps'
        // one key after a minute): one bcrypt, and one slot of `maxRunning`, per distinct header.
        let check = self.checks.withLock { checks in
            if let running = checks[memoKey] { return running }
            let check = Task { try await self.check(credential, api: api, memoKey: memoKey) }
            checks[memoKey] = check
            return check
        }
        return try await check.value
    }

    private func check(_ credential: NHSAPIKeyCredential, api: NHSAPIName, memoKey: String) async throws -> Bool {
        defer {
            self.running.subtract(1, ordering: .relaxed)
            self.checks.withLock { $0[memoKey] = nil }
        }
        guard self.running.add(1, ordering: .relaxed).newValue <= self.maxRunning else { throw NHSAPIKeyBusy() }
        let hash = try await self.store.bcryptHash(api: api, keyName: credential.keyName)
        let secret = credential.secret
        let decoy = self.decoy
        let valid = try await NIOThreadPool.singleton.runIfActive {
            Bcrypt.verify(secret, hash: hash ?? decoy) && hash != nil
        }
        if valid {
            self.remembered.withLock { memo in
                if memo.count >= 4096 { memo.removeAll() }
                memo[memoKey] = ContinuousClock.now.advanced(by: self.memory)
            }
        }
        return valid
    }

    /// Forgets every remembered success (after a key was revoked, in tests).
    package func forget() {
        self.remembered.withLock { $0.removeAll() }
    }
}

/// Too many key checks are running; the request is answered 503.
package struct NHSAPIKeyBusy: Error {}

/// The statement of a service's keys table, `nhs_api_key`: each service's migration group creates it under its next
/// number (`CreateNHSAPIKey` in the service's `Persistence/Migrations`).
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
}

/// The keys in the service's database (`nhs_api_key`).
package struct PostgresNHSAPIKeyStore: NHSAPIKeyStore {
    let database: DatabasePool
    let logger: Logger

    package init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.defaultLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger
    }

    package func bcryptHash(api: NHSAPIName, keyName: String) async throws -> String? {
        let rows = try await self.database.query(
            """
            SELECT bcrypt_hash FROM nhs_api_key
            WHERE api_name = \(api.rawValue) AND key_name = \(keyName) AND revoked_at IS NULL
            """,
            logger: self.logger
        )
        return try rows.first?.decode(String.self)
    }

    /// Adds (or replaces, reactivating) the key `credential.keyName` of `api` with the hash of its secret.
    package func add(_ credential: NHSAPIKeyCredential, api: NHSAPIName, now: Date) async throws {
        let name = credential.keyName
        let hash = try await NIOThreadPool.singleton.runIfActive {
            Bcrypt.hash(credential.secret, cost: NHSAPIKeyVerifier.bcryptCost)
        }
        try await self.database.query(
            """
            INSERT INTO nhs_api_key (api_name, key_name, bcrypt_hash, created_at) VALUES (\(api.rawValue), \(name), \(hash), \(now))
            ON CONFLICT (api_name, key_name) DO UPDATE SET bcrypt_hash = EXCLUDED.bcrypt_hash, created_at = EXCLUDED.created_at, revoked_at = NULL
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
    private let hashes = Mutex<[String: String]>([:])

    package init() {}

    /// Adds `credential` as a key of `api` (hashed at the lowest bcrypt cost, for speed).
    package func add(_ credential: NHSAPIKeyCredential, api: NHSAPIName) {
        let hash = Bcrypt.hash(credential.secret, cost: 4)
        self.hashes.withLock { $0[api.rawValue + ":" + credential.keyName] = hash }
    }

    package func bcryptHash(api: NHSAPIName, keyName: String) async throws -> String? {
        self.hashes.withLock { $0[api.rawValue + ":" + keyName] }
    }
}
