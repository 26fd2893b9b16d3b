// The in-memory verification repository keeps the rules of the PostgreSQL one: every scenario runs against both.

import ENTestSupport
import Foundation
import Testing

@testable import VerificationService

@Suite("Verification repository contract (PostgreSQL and in memory)")
struct VerificationRepositoryContractTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)
    static let day: TimeInterval = 86400

    /// Runs `body` on a fresh repository of `backend`; only the PostgreSQL case has a database.
    private func withRepository(
        _ backend: RepositoryBackend,
        _ body: @Sendable (any VerificationRepository) async throws -> Void
    ) async throws {
        try await backend.run(
            migrating: VerificationMigrations.group,
            inMemory: { InMemoryVerificationRepository() },
            postgres: { PostgresVerificationRepository(client: $0.client, logger: $0.logger) },
            body
        )
    }

    /// A SHA-256 hex value named by `seed`: the form of every token, TAN and teleTAN hash the repository stores.
    private static func hash(_ seed: String) -> String {
        TestIDs.hashedGUID(seed)
    }

    /// A hashed GUID named by `seed`.
    private static func guid(_ seed: String) throws -> HashedGUID {
        try #require(HashedGUID(Self.hash(seed)))
    }

    /// A DOB hash as the app computes it (`x` first), named by `seed`.
    private static func dob(_ seed: String) throws -> DOBHash {
        try #require(DOBHash(TestIDs.dobHash(seed)))
    }

    /// Registers the GUID (and DOB hash) named by the seeds with the token named `token`.
    private static func register(
        _ repository: any VerificationRepository,
        _ token: String,
        guid: String,
        dob: DOBHash? = nil,
        now: Date = Self.now
    ) async throws -> RegistrationOutcome {
        try await repository.registerGUID(tokenHash: Self.hash(token), guid: try Self.guid(guid), dob: dob, now: now)
    }

    /// A TAN named `seed` for `sessionID`, valid for 14 days from `now`.
    private static func tan(
        _ seed: String,
        session sessionID: Int64,
        max: Int = 1,
        type: TeleTANType? = nil,
        now: Date = Self.now
    ) -> TANIssue {
        TANIssue(
            sessionID: sessionID,
            maxPerSession: max,
            tanHash: Self.hash(seed),
            teleTANType: type,
            now: now,
            validUntil: now.addingTimeInterval(14 * Self.day)
        )
    }

    /// A teleTAN named `seed`, created at `now` and valid for an hour unless `validUntil` says otherwise, under a
    /// limit of `limit` created after `windowStart` (an hour before `now` unless given).
    private static func teleTAN(
        _ seed: String,
        keyID: String? = "k1",
        type: TeleTANType = .test,
        now: Date = Self.now,
        validUntil: Date? = nil,
        limit: Int = 100,
        windowStart: Date? = nil
    ) -> TeleTANRequest {
        TeleTANRequest(
            digest: Self.digest(seed, keyID: keyID),
            candidates: Self.candidates(seed, keyIDs: [keyID]),
            type: type,
            now: now,
            validUntil: validUntil ?? now.addingTimeInterval(3600),
            limit: limit,
            windowStart: windowStart ?? now.addingTimeInterval(-3600),
            lockTimeout: .seconds(5)
        )
    }

    /// The stored form of the teleTAN named `seed` under the key `keyID` (`nil`: a row without a key id). The
    /// repository neither hashes nor checks keys: it matches hash and key id as given.
    private static func digest(_ seed: String, keyID: String? = "k1") -> TeleTANDigest {
        TeleTANDigest(keyID: keyID, hash: Self.hash("\(keyID ?? "-")/\(seed)"))
    }

    /// The forms the teleTAN named `seed` is looked up in: under `keyIDs`, in that order.
    private static func candidates(_ seed: String, keyIDs: [String?] = ["k1"]) -> [TeleTANDigest] {
        keyIDs.map { Self.digest(seed, keyID: $0) }
    }

    /// The id of the session of the token named `token`, which must exist.
    private static func sessionID(_ repository: any VerificationRepository, _ token: String) async throws -> Int64 {
        try #require(try await repository.session(tokenHash: Self.hash(token))).id
    }

    // MARK: - Registration

    @Test(
        "a GUID and a DOB hash are registrable once, in either role; a refused registration holds nothing",
        arguments: RepositoryBackend.allCases
    )
    func keysRegistrableOnce(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let dob = try Self.dob("a")
            // A value valid as a hashed GUID and as a DOB hash.
            let shared = try #require(DOBHash(Self.hash("shared")))

            let first = try await Self.register(repository, "t1", guid: "a", dob: dob)
            let guidAgain = try await Self.register(repository, "t2", guid: "a")
            let dobAgain = try await Self.register(repository, "t3", guid: "b", dob: dob)
            let afterRefusal = try await Self.register(repository, "t4", guid: "b")
            let sharedAsDOB = try await Self.register(repository, "t5", guid: "c", dob: shared)
            let sharedAsGUID = try await Self.register(repository, "t6", guid: "shared")
            let guidFirst = try await Self.register(repository, "t7", guid: "d")
            let guidAsDOB = try await Self.register(
                repository,
                "t8",
                guid: "e",
                dob: DOBHash(Self.hash("d"))
            )
            let ownGUIDAsDOB = try await Self.register(
                repository,
                "t9",
                guid: "f",
                dob: DOBHash(Self.hash("f"))
            )
            let afterBoth = try await Self.register(repository, "t10", guid: "e")
            let session = try await repository.session(tokenHash: Self.hash("t1"))

            #expect(first == .registered)
            #expect(guidAgain == .keyUnavailable)
            #expect(dobAgain == .keyUnavailable)
            #expect(afterRefusal == .registered, "the refused registration kept its GUID")
            #expect(sharedAsDOB == .registered)
            #expect(sharedAsGUID == .keyUnavailable, "a DOB hash registered again as a GUID")
            #expect(guidFirst == .registered)
            #expect(guidAsDOB == .keyUnavailable, "a GUID registered again as a DOB hash")
            #expect(ownGUIDAsDOB == .keyUnavailable, "one value as GUID and DOB hash of one registration")
            #expect(afterBoth == .registered, "the refused registrations kept their GUIDs")
            #expect(session?.source == .guid(try Self.guid("a"), dob: dob))
            #expect(session?.tanCounter == 0)
            #expect(session?.createdAt == Self.now)
            for refused in ["t2", "t3", "t6", "t8", "t9"] {
                #expect(try await repository.session(tokenHash: Self.hash(refused)) == nil, "token \(refused)")
            }
        }
    }

    @Test(
        "a token that exists is a collision for a GUID and a teleTAN, and spends neither",
        arguments: RepositoryBackend.allCases
    )
    func tokenCollision(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            _ = try await Self.register(repository, "t1", guid: "a")
            _ = try await repository.createTeleTAN(Self.teleTAN("tele"))

            let guidCollision = try await Self.register(repository, "t1", guid: "b")
            let teleTANCollision = try await repository.registerTeleTAN(
                tokenHash: Self.hash("t1"),
                candidates: Self.candidates("tele"),
                now: Self.now
            )
            let guidLater = try await Self.register(repository, "t2", guid: "b")
            let teleTANLater = try await repository.registerTeleTAN(
                tokenHash: Self.hash("t3"),
                candidates: Self.candidates("tele"),
                now: Self.now
            )

            #expect(guidCollision == .tokenCollision)
            #expect(teleTANCollision == .tokenCollision)
            #expect(guidLater == .registered)
            #expect(teleTANLater == .registered)
            #expect(
                try await repository.session(tokenHash: Self.hash("t1"))?.source == .guid(try Self.guid("a"), dob: nil)
            )
        }
    }

    @Test(
        "a teleTAN row matches a candidate only under the candidate's key id (none: a row without one); a teleTAN stored under any candidate form is a collision",
        arguments: RepositoryBackend.allCases
    )
    func teleTANKeyIDs(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            _ = try await repository.createTeleTAN(Self.teleTAN("a", keyID: "k1"))
            _ = try await repository.createTeleTAN(Self.teleTAN("legacy", keyID: nil))
            _ = try await repository.createTeleTAN(Self.teleTAN("c", keyID: "k2"))
            let register = { (token: String, candidates: [TeleTANDigest]) in
                try await repository.registerTeleTAN(tokenHash: Self.hash(token), candidates: candidates, now: Self.now)
            }

            // The right hash under another key id, and a legacy row's hash claimed under a key.
            let wrongKeyID = try await register("t1", [TeleTANDigest(keyID: "k2", hash: Self.digest("a").hash)])
            let legacyUnderKey = try await register(
                "t2",
                [TeleTANDigest(keyID: "k1", hash: Self.digest("legacy", keyID: nil).hash)]
            )
            let rotated = try await register("t3", Self.candidates("a", keyIDs: ["k2", "k1", nil]))
            let legacy = try await register("t4", Self.candidates("legacy", keyIDs: ["k2", "k1", nil]))
            let collision = try await repository.createTeleTAN(
                TeleTANRequest(
                    digest: Self.digest("c", keyID: "k1"),
                    candidates: Self.candidates("c", keyIDs: ["k1", "k2"]),
                    type: .test,
                    now: Self.now,
                    validUntil: Self.now.addingTimeInterval(3600),
                    limit: 100,
                    windowStart: Self.now.addingTimeInterval(-3600),
                    lockTimeout: .seconds(5)
                )
            )
            let stillThere = try await register("t5", Self.candidates("c", keyIDs: ["k1", "k2"]))

            #expect(wrongKeyID == .keyUnavailable)
            #expect(legacyUnderKey == .keyUnavailable)
            #expect(rotated == .registered)
            #expect(legacy == .registered)
            #expect(collision == .collision)
            #expect(stillThere == .registered)
            #expect(try await repository.session(tokenHash: Self.hash("t4"))?.source == .teleTAN(.test))
        }
    }

    @Test(
        "a teleTAN registers once, only while it is unexpired, and its session carries its type",
        arguments: RepositoryBackend.allCases
    )
    func teleTANRegistration(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let expiry = Self.now.addingTimeInterval(3600)
            _ = try await repository.createTeleTAN(Self.teleTAN("event", type: .event, validUntil: expiry))
            _ = try await repository.createTeleTAN(Self.teleTAN("late", validUntil: expiry))
            _ = try await repository.createTeleTAN(Self.teleTAN("last second", validUntil: expiry))
            let register = { (token: String, teleTAN: String, now: Date) in
                try await repository.registerTeleTAN(
                    tokenHash: Self.hash(token),
                    candidates: Self.candidates(teleTAN),
                    now: now
                )
            }

            let first = try await register("t1", "event", Self.now)
            let again = try await register("t2", "event", Self.now)
            let atExpiry = try await register("t3", "late", expiry)
            let lastSecond = try await register("t4", "last second", expiry.addingTimeInterval(-1))
            let unknown = try await register("t5", "never created", Self.now)

            #expect(first == .registered)
            #expect(again == .keyUnavailable)
            #expect(atExpiry == .keyUnavailable)
            #expect(lastSecond == .registered)
            #expect(unknown == .keyUnavailable)
            #expect(try await repository.session(tokenHash: Self.hash("t1"))?.source == .teleTAN(.event))
            for refused in ["t2", "t3", "t5"] {
                #expect(try await repository.session(tokenHash: Self.hash(refused)) == nil, "token \(refused)")
            }
        }
    }

    // MARK: - TANs

    @Test(
        "TANs count against the session's quota; a colliding TAN counts nothing; a gone session gets none",
        arguments: RepositoryBackend.allCases
    )
    func tanQuota(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            _ = try await Self.register(repository, "t1", guid: "a")
            _ = try await Self.register(repository, "t2", guid: "b")
            let id = try await Self.sessionID(repository, "t1")
            let other = try await Self.sessionID(repository, "t2")

            let first = try await repository.issueTAN(Self.tan("tan1", session: id, max: 2))
            let collision = try await repository.issueTAN(Self.tan("tan1", session: id, max: 2))
            let counterAfterCollision = try await repository.session(tokenHash: Self.hash("t1"))?.tanCounter
            let collisionElsewhere = try await repository.issueTAN(Self.tan("tan1", session: other, max: 2))
            let second = try await repository.issueTAN(Self.tan("tan2", session: id, max: 2))
            let third = try await repository.issueTAN(Self.tan("tan3", session: id, max: 2))
            let collisionOverQuota = try await repository.issueTAN(Self.tan("tan1", session: id, max: 2))
            let gone = try await repository.issueTAN(Self.tan("tan4", session: max(id, other) + 1000))

            #expect(first == .issued)
            #expect(collision == .collision)
            #expect(counterAfterCollision == 1)
            #expect(collisionElsewhere == .collision)
            #expect(second == .issued)
            #expect(third == .quotaUsed)
            #expect(collisionOverQuota == .quotaUsed)
            #expect(gone == .sessionGone)
            #expect(try await repository.session(tokenHash: Self.hash("t1"))?.tanCounter == 2)
            #expect(try await repository.session(tokenHash: Self.hash("t2"))?.tanCounter == 0)
            #expect(try await repository.consumeTAN(hash: Self.hash("tan3"), now: Self.now).consumed == false)
        }
    }

    @Test(
        "a TAN records the attempt that spent it: that attempt is answered as before, others are told who spent it",
        arguments: RepositoryBackend.allCases
    )
    func tanRecordsItsRedeemer(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            _ = try await Self.register(repository, "t1", guid: "a")
            let issue = Self.tan("lab", session: try await Self.sessionID(repository, "t1"))
            _ = try await repository.issueTAN(issue)
            let first = UUID()
            let other = UUID()
            let hash = Self.hash("lab")

            #expect(try await repository.tanRedemption(hash: hash) == .unused)
            #expect(try await repository.tanRedemption(hash: Self.hash("never issued")) == nil)
            let spent = try await repository.consumeTAN(hash: hash, now: Self.now, requiring: .any, submission: first)
            // The same attempt, even after the TAN's validity: its first call spent it.
            let repeated = try await repository.consumeTAN(
                hash: hash,
                now: issue.validUntil.addingTimeInterval(60),
                requiring: .notEvent,
                submission: first
            )
            let byOther = try await repository.consumeTAN(hash: hash, now: Self.now, requiring: .any, submission: other)
            let unnamed = try await repository.consumeTAN(hash: hash, now: Self.now, requiring: .any, submission: nil)

            #expect(spent == .consumed(nil))
            #expect(repeated == .consumed(nil))
            #expect(byOther == .redeemed(by: first))
            #expect(unnamed == .redeemed(by: first))
            #expect(try await repository.tanRedemption(hash: hash) == .redeemed(by: first))

            // The record of the redemption outlives the TAN's use by the redemption retention, then goes.
            let later = Self.now.addingTimeInterval(3600)
            _ = try await repository.applyRetention(
                cutoff: Self.now.addingTimeInterval(-86_400),
                now: later,
                rateWindowStart: later,
                redemptionCutoff: Self.now.addingTimeInterval(-1)
            )
            #expect(try await repository.tanRedemption(hash: hash) == .redeemed(by: first))
            _ = try await repository.applyRetention(
                cutoff: Self.now.addingTimeInterval(-86_400),
                now: later,
                rateWindowStart: later,
                redemptionCutoff: Self.now.addingTimeInterval(1)
            )
            #expect(try await repository.tanRedemption(hash: hash) == nil)
        }
    }

    @Test(
        "a TAN is consumed once, only inside its validity window, and tells the teleTAN type it derives from",
        arguments: RepositoryBackend.allCases
    )
    func tanConsumedOnce(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            _ = try await Self.register(repository, "t1", guid: "a")
            _ = try await repository.createTeleTAN(Self.teleTAN("tele", type: .event))
            _ = try await repository.registerTeleTAN(
                tokenHash: Self.hash("t2"),
                candidates: Self.candidates("tele"),
                now: Self.now
            )
            let labIssue = Self.tan("lab", session: try await Self.sessionID(repository, "t1"))
            let teleIssue = Self.tan("event", session: try await Self.sessionID(repository, "t2"), type: .event)
            _ = try await repository.issueTAN(labIssue)
            _ = try await repository.issueTAN(teleIssue)
            let consume = { (tan: String, now: Date) in try await repository.consumeTAN(hash: Self.hash(tan), now: now)
            }

            let early = try await consume("lab", Self.now.addingTimeInterval(-1))
            let lab = try await consume("lab", Self.now)
            let labAgain = try await consume("lab", Self.now)
            let atExpiry = try await consume("event", teleIssue.validUntil)
            let lastSecond = try await consume("event", teleIssue.validUntil.addingTimeInterval(-1))
            let unknown = try await consume("never issued", Self.now)

            #expect(early.consumed == false)
            #expect(lab.consumed == true && lab.teleTANType == nil)
            #expect(labAgain.consumed == false)
            #expect(atExpiry.consumed == false)
            #expect(lastSecond.consumed == true && lastSecond.teleTANType == .event)
            #expect(unknown.consumed == false && unknown.teleTANType == nil)
        }
    }

    @Test(
        "a TAN of the other kind than required is not consumed (wrong kind) and stays usable with the right one",
        arguments: RepositoryBackend.allCases
    )
    func tanKindChecked(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            _ = try await Self.register(repository, "t1", guid: "a")
            _ = try await repository.createTeleTAN(Self.teleTAN("tele", type: .event))
            _ = try await repository.registerTeleTAN(
                tokenHash: Self.hash("t2"),
                candidates: Self.candidates("tele"),
                now: Self.now
            )
            _ = try await repository.issueTAN(Self.tan("lab", session: try await Self.sessionID(repository, "t1")))
            _ = try await repository.issueTAN(
                Self.tan("event", session: try await Self.sessionID(repository, "t2"), type: .event)
            )
            let consume = { (tan: String, requirement: TANRequirement) in
                try await repository.consumeTAN(hash: Self.hash(tan), now: Self.now, requiring: requirement)
            }

            let labAsEvent = try await consume("lab", .event)
            let eventAsKeys = try await consume("event", .notEvent)
            let lab = try await consume("lab", .notEvent)
            let event = try await consume("event", .event)
            let unknown = try await consume("never issued", .event)

            #expect(labAsEvent == .wrongKind)
            #expect(eventAsKeys == .wrongKind)
            #expect(lab == .consumed(nil))
            #expect(event == .consumed(.event))
            #expect(unknown == .unavailable)
        }
    }

    // MARK: - teleTANs

    @Test(
        "teleTANs: at most the limit created after the window's start; a hash that exists is a collision",
        arguments: RepositoryBackend.allCases
    )
    func teleTANRateLimit(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let create = { (seed: String, limit: Int, windowStart: Date) in
                try await repository.createTeleTAN(Self.teleTAN(seed, limit: limit, windowStart: windowStart))
            }
            let hourAgo = Self.now.addingTimeInterval(-3600)

            let first = try await create("a", 2, hourAgo)
            let second = try await create("b", 2, hourAgo)
            let third = try await create("c", 2, hourAgo)
            let existingAtLimit = try await create("a", 2, hourAgo)
            let existing = try await create("a", 3, hourAgo)
            // Created exactly at the window's start: no longer in the window.
            let windowMoved = try await create("c", 2, Self.now)

            #expect(first == .created(inWindow: 1))
            #expect(second == .created(inWindow: 2))
            #expect(third == .rateLimited)
            #expect(existingAtLimit == .rateLimited)
            #expect(existing == .collision)
            #expect(windowMoved == .created(inWindow: 1))
        }
    }

    // MARK: - Retention

    @Test(
        "retention deletes old sessions with their keys, and due TANs and teleTANs; everything else stays",
        arguments: RepositoryBackend.allCases
    )
    func retention(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let (now, day) = (Self.now, Self.day)
            let old = now.addingTimeInterval(-2 * day)
            _ = try await Self.register(repository, "old", guid: "old", dob: try Self.dob("old"), now: old)
            _ = try await Self.register(repository, "young", guid: "young", now: now)
            let oldSession = try await Self.sessionID(repository, "old")
            let youngSession = try await Self.sessionID(repository, "young")
            _ = try await repository.issueTAN(Self.tan("tan old", session: oldSession, max: 9, now: old))
            var expired = Self.tan("tan expired", session: youngSession, max: 9)
            expired.validUntil = now
            _ = try await repository.issueTAN(expired)
            _ = try await repository.issueTAN(Self.tan("tan consumed", session: youngSession, max: 9))
            _ = try await repository.consumeTAN(hash: Self.hash("tan consumed"), now: now)
            _ = try await repository.issueTAN(Self.tan("tan live", session: youngSession, max: 9))
            // Expired and outside the rate window: due. Expired but still counted by the rate limit, and old but
            // unexpired: kept.
            _ = try await repository.createTeleTAN(
                Self.teleTAN("tele old", now: old, validUntil: now.addingTimeInterval(-day))
            )
            _ = try await repository.createTeleTAN(
                Self.teleTAN("tele counted", now: now.addingTimeInterval(-600), validUntil: now.addingTimeInterval(-60))
            )
            _ = try await repository.createTeleTAN(
                Self.teleTAN("tele live", now: old, validUntil: now.addingTimeInterval(day))
            )

            let outcome = try await repository.applyRetention(
                cutoff: now.addingTimeInterval(-day),
                now: now,
                rateWindowStart: now.addingTimeInterval(-3600),
                redemptionCutoff: now.addingTimeInterval(1)
            )
            let again = try await repository.applyRetention(
                cutoff: now.addingTimeInterval(-day),
                now: now,
                rateWindowStart: now.addingTimeInterval(-3600),
                redemptionCutoff: now.addingTimeInterval(1)
            )

            #expect(outcome == VerificationRetentionOutcome(sessions: 1, tans: 3, teleTANs: 1))
            #expect(again == VerificationRetentionOutcome())
            #expect(try await repository.session(tokenHash: Self.hash("old")) == nil)
            #expect(try await repository.session(tokenHash: Self.hash("young")) != nil)
            #expect(try await repository.issueTAN(Self.tan("tan new", session: oldSession)) == .sessionGone)
            // The deleted session's GUID and DOB hash are free again; the kept session's GUID is not.
            #expect(try await Self.register(repository, "new", guid: "old", dob: try Self.dob("old")) == .registered)
            #expect(try await Self.register(repository, "newer", guid: "young") == .keyUnavailable)
            // The old TAN was still inside its window: only retention makes it unusable.
            #expect(try await repository.consumeTAN(hash: Self.hash("tan old"), now: now).consumed == false)
            #expect(try await repository.consumeTAN(hash: Self.hash("tan live"), now: now).consumed == true)
            #expect(
                try await repository.registerTeleTAN(
                    tokenHash: Self.hash("tele token"),
                    candidates: Self.candidates("tele live"),
                    now: now
                ) == .registered
            )
            // The counted teleTAN still holds the only slot of the window; the deleted one's hash is free.
            #expect(try await repository.createTeleTAN(Self.teleTAN("tele other", limit: 1)) == .rateLimited)
            #expect(try await repository.createTeleTAN(Self.teleTAN("tele old", limit: 2)) == .created(inWindow: 2))
        }
    }
    @Test(
        "the daily cap: refused registrations store nothing and keep their keys; the next UTC day counts afresh",
        arguments: RepositoryBackend.allCases
    )
    func dailyCap(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let midnight = Date(timeIntervalSince1970: 1_700_006_400)  // the UTC midnight after `now`
            _ = try await repository.createTeleTAN(Self.teleTAN("tele", validUntil: midnight.addingTimeInterval(3600)))
            let guid = { (token: String, seed: String, now: Date) in
                try await repository.registerGUID(
                    tokenHash: Self.hash(token),
                    guid: try Self.guid(seed),
                    dob: nil,
                    now: now,
                    dailyCap: 2
                )
            }
            let teleTAN = { (token: String, now: Date) in
                try await repository.registerTeleTAN(
                    tokenHash: Self.hash(token),
                    candidates: Self.candidates("tele"),
                    now: now,
                    dailyCap: 2
                )
            }

            let first = try await guid("c1", "g1", Self.now)
            let taken = try await guid("c2", "g1", Self.now)
            let second = try await guid("c3", "g2", Self.now)
            let third = try await guid("c4", "g3", midnight.addingTimeInterval(-1))
            let teleTANCapped = try await teleTAN("c5", Self.now)
            let nextDay = try await guid("c6", "g3", midnight)
            let teleTANNextDay = try await teleTAN("c7", midnight)

            #expect(first == .registered)
            #expect(taken == .keyUnavailable)
            #expect(second == .registered, "a refused registration was counted")
            #expect(third == .dailyCapReached)
            #expect(teleTANCapped == .dailyCapReached)
            #expect(nextDay == .registered, "the capped GUID stayed registrable")
            #expect(teleTANNextDay == .registered, "the capped teleTAN stayed unredeemed")
            for refused in ["c2", "c4", "c5"] {
                #expect(try await repository.session(tokenHash: Self.hash(refused)) == nil, "token \(refused)")
            }
        }
    }

    @Test(
        "of 30 parallel registrations under a cap of 7, exactly 7 are created",
        arguments: RepositoryBackend.allCases
    )
    func dailyCapUnderConcurrency(_ backend: RepositoryBackend) async throws {
        try await self.withRepository(backend) { repository in
            let outcomes = try await withThrowingTaskGroup(of: RegistrationOutcome.self) { group in
                for index in 0..<30 {
                    group.addTask {
                        try await repository.registerGUID(
                            tokenHash: Self.hash("parallel token \(index)"),
                            guid: try Self.guid("parallel \(index)"),
                            dob: nil,
                            now: Self.now,
                            dailyCap: 7
                        )
                    }
                }
                return try await group.reduce(into: [RegistrationOutcome]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .registered }.count == 7)
            #expect(outcomes.filter { $0 == .dailyCapReached }.count == 23)
        }
    }
}
