// The in-memory portal repository keeps the rules of the PostgreSQL one: every scenario runs against both.

import ENTestSupport
import Foundation
import Testing

@testable import PortalService

@Suite("Portal repository contract (PostgreSQL and in memory)")
struct PortalRepositoryContractTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// Runs `body` on a fresh repository of `backend`; only the PostgreSQL case has a database.
    private func withRepository(
        _ backend: RepositoryBackend,
        _ body: @Sendable (any PortalRepository) async throws -> Void
    ) async throws {
        try await backend.run(
            migrating: PortalMigrations.group,
            inMemory: { InMemoryPortalRepository() },
            postgres: { PostgresPortalRepository(client: $0.client, logger: $0.logger) },
            body
        )
    }

    /// A sealed TOTP secret as the repository stores it: 48 bytes `byte` under the key id `test-1` (the repository
    /// neither seals nor opens).
    static func sealed(_ byte: UInt8) -> StoredTOTPSecret {
        .sealed(keyID: "test-1", box: Array(repeating: byte, count: TOTPSecretBox.sealedLength))
    }

    /// Adds the officer `username` (with the sealed TOTP secret `sealed(secret)`) and returns it as stored.
    @discardableResult
    private static func addOfficer(
        _ repository: any PortalRepository,
        _ username: String,
        roles: [String] = ["c19hotline"],
        secret: UInt8 = 1
    ) async throws -> Officer {
        try await self.addOfficer(repository, username, roles: roles, Self.sealed(secret))
    }

    /// Adds the officer `username` with the stored secret `secret` and returns it as stored.
    private static func addOfficer(
        _ repository: any PortalRepository,
        _ username: String,
        roles: [String] = ["c19hotline"],
        _ secret: StoredTOTPSecret
    ) async throws -> Officer {
        let added = try await repository.addOfficer(
            NewOfficer(
                username: username,
                passwordHash: "hash-of-\(username)",
                roles: roles,
                totpSecret: secret
            ),
            now: Self.now
        )
        try #require(added, "\(username) exists already")
        return try #require(try await repository.officer(named: username))
    }

    /// A session named `token` of `officerID` at `stage`, created `age` seconds ago and last seen `idle` ago.
    private static func session(
        _ token: String,
        of officerID: Int64?,
        stage: PortalSession.Stage = .authenticated,
        age: TimeInterval = 0,
        idle: TimeInterval = 0
    ) -> PortalSession {
        PortalSession(
            tokenHash: TestIDs.hashedGUID(token),
            csrfHash: TestIDs.hashedGUID("csrf-\(token)"),
            officerID: officerID,
            stage: stage,
            createdAt: Self.now.addingTimeInterval(-age),
            lastSeenAt: Self.now.addingTimeInterval(-idle)
        )
    }

    /// Whether the session named `token` exists.
    private static func exists(_ repository: any PortalRepository, _ token: String) async throws -> Bool {
        try await repository.session(tokenHash: TestIDs.hashedGUID(token)) != nil
    }

    // MARK: - Officers

    @Test(
        "an officer is added once per name, read by name and by id, listed by name; a password can change",
        arguments: RepositoryBackend.allCases
    )
    func officers(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let bob = try await Self.addOfficer(repository, "bob", roles: ["c19hotline", "c19hotline_event"])
            let duplicate = try await repository.addOfficer(
                NewOfficer(
                    username: "bob",
                    passwordHash: "other",
                    roles: [],
                    totpSecret: Self.sealed(2)
                ),
                now: Self.now
            )
            let alice = try await Self.addOfficer(repository, "alice", secret: 3)
            try await repository.setPassword(officerID: bob.id, passwordHash: "new-hash")

            #expect(!duplicate)
            #expect(
                bob
                    == Officer(
                        id: bob.id,
                        username: "bob",
                        passwordHash: "hash-of-bob",
                        roles: ["c19hotline", "c19hotline_event"],
                        totpSecret: Self.sealed(1),
                        failedLogins: 0,
                        lockedUntil: nil,
                        disabled: false
                    )
            )
            #expect(alice.id != bob.id)
            #expect(try await repository.officer(id: alice.id) == alice)
            #expect(try await repository.officer(id: bob.id)?.passwordHash == "new-hash")
            #expect(try await repository.officer(named: "bob")?.passwordHash == "new-hash")
            #expect(try await repository.allOfficers().map(\.username) == ["alice", "bob"])
            #expect(try await repository.officer(named: "carol") == nil)
            #expect(try await repository.officer(id: alice.id + bob.id + 1000) == nil)
        }
    }

    @Test(
        "attempts are claimed up to the limit, the last locks; locked, disabled or unknown: none; clearing unlocks",
        arguments: RepositoryBackend.allCases
    )
    func attemptClaims(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let officer = try await Self.addOfficer(repository, "bob")
            let lock = Self.now.addingTimeInterval(900)
            let claim = { (id: Int64, now: Date) in
                try await repository.claimAttempt(officerID: id, maxFailures: 3, lockedUntil: lock, now: now)
            }
            let read = { try #require(try await repository.officer(id: officer.id)) }

            let claims = [
                try await claim(officer.id, Self.now), try await claim(officer.id, Self.now),
                try await claim(officer.id, Self.now),
            ]
            let locked = try await read()
            let whileLocked = try await claim(officer.id, lock.addingTimeInterval(-1))
            let afterLock = try await claim(officer.id, lock)
            try await repository.clearFailures(officerID: officer.id)
            let cleared = try await read()
            let unknown = try await claim(officer.id + 1000, Self.now)
            _ = try await repository.disable(username: "bob")
            let disabled = try await claim(officer.id, lock)

            #expect(claims == [.granted(locksNow: false), .granted(locksNow: false), .granted(locksNow: true)])
            #expect(locked.failedLogins == 0 && locked.lockedUntil == lock)
            #expect(whileLocked == .refused)
            #expect(afterLock == .granted(locksNow: false))
            #expect(cleared.failedLogins == 0 && cleared.lockedUntil == nil)
            #expect(unknown == .refused)
            #expect(disabled == .refused)
        }
    }

    @Test(
        "a password change's session sweep ends every other session of the officer and none of another's",
        arguments: RepositoryBackend.allCases
    )
    func otherSessionsEnd(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let anna = try await Self.addOfficer(repository, "anna")
            let bert = try await Self.addOfficer(repository, "bert", secret: 2)
            for (token, officer) in [("a1", anna.id), ("a2", anna.id), ("a3", anna.id), ("b1", bert.id)] {
                try await repository.createSession(Self.session(token, of: officer))
            }

            try await repository.deleteSessions(ofOfficer: anna.id, except: TestIDs.hashedGUID("a2"))

            #expect(try await !Self.exists(repository, "a1"))
            #expect(try await Self.exists(repository, "a2"))
            #expect(try await !Self.exists(repository, "a3"))
            #expect(try await Self.exists(repository, "b1"))
        }
    }

    @Test(
        "a TOTP secret is replaced only while the row still holds the expected one; a secret in clear reads back as such",
        arguments: RepositoryBackend.allCases
    )
    func totpSecretReplacement(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let clear = StoredTOTPSecret.clear(Array(repeating: 7, count: 20))
            let legacy = try await Self.addOfficer(repository, "anna", clear)
            let bert = try await Self.addOfficer(repository, "bert", secret: 2)

            let sealed = try await repository.replaceTOTPSecret(
                officerID: legacy.id,
                expected: clear,
                with: Self.sealed(3)
            )
            let again = try await repository.replaceTOTPSecret(
                officerID: legacy.id,
                expected: clear,
                with: Self.sealed(4)
            )
            let stale = try await repository.replaceTOTPSecret(
                officerID: bert.id,
                expected: Self.sealed(9),
                with: Self.sealed(5)
            )
            let resealed = try await repository.replaceTOTPSecret(
                officerID: bert.id,
                expected: Self.sealed(2),
                with: .sealed(keyID: "test-2", box: Array(repeating: 6, count: TOTPSecretBox.sealedLength))
            )

            #expect(legacy.totpSecret == clear)
            #expect([sealed, again, stale, resealed] == [true, false, false, true])
            #expect(try await repository.officer(id: legacy.id)?.totpSecret == Self.sealed(3))
            #expect(
                try await repository.officer(id: bert.id)?.totpSecret
                    == .sealed(keyID: "test-2", box: Array(repeating: 6, count: TOTPSecretBox.sealedLength))
            )
        }
    }

    @Test(
        "a TOTP step is used once and never an older one, also after a new secret, which ends the sessions",
        arguments: RepositoryBackend.allCases
    )
    func totpSteps(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let officer = try await Self.addOfficer(repository, "bob")
            let other = try await Self.addOfficer(repository, "carol")
            let use = { (id: Int64, step: Int64) in try await repository.useTOTPStep(officerID: id, step: step) }
            try await repository.createSession(Self.session("bob's", of: officer.id))
            try await repository.createSession(Self.session("carol's", of: other.id))

            let steps = [
                try await use(officer.id, 100), try await use(officer.id, 100), try await use(officer.id, 99),
                try await use(officer.id, 101),
            ]
            let otherOfficer = try await use(other.id, 100)
            let reset = try await repository.resetTOTP(username: "bob", secret: Self.sealed(9))
            let afterReset = [try await use(officer.id, 101), try await use(officer.id, 102)]
            let unknownReset = try await repository.resetTOTP(username: "dave", secret: Self.sealed(9))
            let unknownOfficer = try await use(officer.id + other.id + 1000, 1)

            #expect(steps == [true, false, false, true])
            #expect(otherOfficer, "steps are counted per officer")
            #expect(reset)
            #expect(try await repository.officer(id: officer.id)?.totpSecret == Self.sealed(9))
            #expect(afterReset == [false, true])
            #expect(!unknownReset)
            #expect(!unknownOfficer)
            #expect(try await !Self.exists(repository, "bob's"))
            #expect(try await Self.exists(repository, "carol's"))
        }
    }

    @Test(
        "the teleTAN slot is taken once per interval, and given back only by the claim that took it",
        arguments: RepositoryBackend.allCases
    )
    func teleTANSlot(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let officer = try await Self.addOfficer(repository, "bob")
            let at = { (seconds: TimeInterval) in Self.now.addingTimeInterval(seconds) }
            let claim = { (seconds: TimeInterval) in
                try await repository.claimTeleTANSlot(officerID: officer.id, now: at(seconds), interval: 30)
            }

            let first = try await claim(0)
            let tooSoon = try await claim(29)
            let afterInterval = try await claim(30)
            try await repository.releaseTeleTANSlot(officerID: officer.id, claimedAt: at(0))
            let afterStaleRelease = try await claim(31)
            try await repository.releaseTeleTANSlot(officerID: officer.id, claimedAt: at(30))
            let afterRelease = try await claim(31)
            let unknown = try await repository.claimTeleTANSlot(officerID: officer.id + 1000, now: at(0), interval: 30)

            #expect(first == nil)
            #expect(tooSoon == at(0))
            #expect(afterInterval == nil)
            #expect(afterStaleRelease == at(30))
            #expect(afterRelease == nil)
            #expect(unknown == at(0), "an unknown officer claims nothing")
        }
    }

    // MARK: - Sessions

    @Test(
        "sessions are created, read, touched and deleted; expiry removes the idle and the old ones only",
        arguments: RepositoryBackend.allCases
    )
    func sessions(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let officer = try await Self.addOfficer(repository, "bob")
            let created = Self.session("s1", of: officer.id, stage: .password)
            try await repository.createSession(created)
            let read = try await repository.session(tokenHash: created.tokenHash)
            try await repository.touchSession(tokenHash: created.tokenHash, now: Self.now.addingTimeInterval(60))
            let touched = try await repository.session(tokenHash: created.tokenHash)
            try await repository.deleteSession(tokenHash: created.tokenHash)
            let deleted = try await repository.session(tokenHash: created.tokenHash)

            // Idle for 15 minutes or older than 12 hours ends a session; exactly at either limit it lives.
            let (idleLimit, ageLimit): (TimeInterval, TimeInterval) = (900, 43_200)
            for session in [
                Self.session("idle", of: officer.id, idle: idleLimit + 1),
                Self.session("old", of: officer.id, age: ageLimit + 1),
                Self.session("at the limits", of: officer.id, age: ageLimit, idle: idleLimit),
                Self.session("anonymous", of: nil, stage: .anonymous),
            ] {
                try await repository.createSession(session)
            }
            try await repository.deleteExpiredSessions(
                idleBefore: Self.now.addingTimeInterval(-idleLimit),
                createdBefore: Self.now.addingTimeInterval(-ageLimit)
            )

            #expect(read == created)
            #expect(touched?.lastSeenAt == Self.now.addingTimeInterval(60))
            #expect(touched?.createdAt == created.createdAt)
            #expect(deleted == nil)
            #expect(try await !Self.exists(repository, "idle"))
            #expect(try await !Self.exists(repository, "old"))
            #expect(try await Self.exists(repository, "at the limits"))
            #expect(try await repository.session(tokenHash: TestIDs.hashedGUID("anonymous"))?.officerID == nil)
            #expect(try await Self.exists(repository, "anonymous"))
        }
    }

    @Test(
        "disabling an officer ends that officer's sessions only; an unknown name disables nobody",
        arguments: RepositoryBackend.allCases
    )
    func disable(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let bob = try await Self.addOfficer(repository, "bob")
            let carol = try await Self.addOfficer(repository, "carol")
            for session in [
                Self.session("bob 1", of: bob.id), Self.session("bob 2", of: bob.id, stage: .password),
                Self.session("carol", of: carol.id), Self.session("anonymous", of: nil, stage: .anonymous),
            ] {
                try await repository.createSession(session)
            }

            let disabled = try await repository.disable(username: "bob")
            let unknown = try await repository.disable(username: "dave")

            #expect(disabled)
            #expect(!unknown)
            #expect(try await repository.officer(id: bob.id)?.disabled == true)
            #expect(try await repository.officer(id: carol.id)?.disabled == false)
            #expect(try await !Self.exists(repository, "bob 1"))
            #expect(try await !Self.exists(repository, "bob 2"))
            #expect(try await Self.exists(repository, "carol"))
            #expect(try await Self.exists(repository, "anonymous"))
        }
    }

    // MARK: - Audit

    @Test(
        "the schema refuses a bad name or TOTP secret, a session with a taken token or of an unknown officer",
        arguments: RepositoryBackend.allCases
    )
    func schemaChecks(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let officer = try await Self.addOfficer(repository, "anna")
            try await repository.createSession(Self.session("taken", of: officer.id))
            let refused: [(String, @Sendable () async throws -> Void)] = [
                ("upper-case name", { _ = try await Self.addOfficer(repository, "Bert") }),
                (
                    "19-byte secret in clear",
                    { _ = try await Self.addOfficer(repository, "carl", .clear(Array(repeating: 1, count: 19))) }
                ),
                (
                    "47-byte sealed box",
                    {
                        _ = try await Self.addOfficer(
                            repository,
                            "carl",
                            .sealed(keyID: "test-1", box: Array(repeating: 1, count: 47))
                        )
                    }
                ),
                (
                    "sealed under a bad key id",
                    {
                        _ = try await Self.addOfficer(
                            repository,
                            "carl",
                            .sealed(keyID: "no/slash", box: Array(repeating: 1, count: 48))
                        )
                    }
                ),
                ("taken token", { try await repository.createSession(Self.session("taken", of: nil)) }),
                (
                    "unknown officer",
                    { try await repository.createSession(Self.session("orphan", of: officer.id + 100)) }
                ),
            ]

            for (what, attempt) in refused {
                await #expect(throws: (any Error).self, "\(what)") { try await attempt() }
            }
            #expect(try await repository.allOfficers().map(\.username) == ["anna"])
            #expect(try await !Self.exists(repository, "orphan"))
        }
    }

    @Test(
        "the audit trail reads back from a time on, in the order it was recorded",
        arguments: RepositoryBackend.allCases
    )
    func auditOrder(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let events = [
                AuditEvent(at: Self.now, username: "bob", action: "login", details: ""),
                AuditEvent(
                    at: Self.now.addingTimeInterval(-60),
                    username: "carol",
                    action: "teletan_issued",
                    details: "type=TEST"
                ),
                AuditEvent(at: Self.now.addingTimeInterval(60), username: "bob", action: "logout", details: "ä ✓"),
            ]
            for event in events {
                try await repository.audit(event)
            }

            #expect(try await repository.auditEvents(since: Self.now.addingTimeInterval(-60)) == events)
            #expect(try await repository.auditEvents(since: Self.now) == [events[0], events[2]])
            #expect(try await repository.auditEvents(since: Self.now.addingTimeInterval(61)).isEmpty)
        }
    }
}
