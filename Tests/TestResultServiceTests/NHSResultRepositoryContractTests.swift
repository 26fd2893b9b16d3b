// The in-memory NHS results keep the rules of the PostgreSQL ones: every scenario runs against both.

import ENNHS
import ENTestSupport
import Foundation
import Testing

@testable import TestResultService

@Suite("NHS results contract (PostgreSQL and in memory)")
struct NHSResultRepositoryContractTests {
    private func withResults(
        _ backend: RepositoryBackend,
        _ body: @Sendable (any NHSResultRepository) async throws -> Void
    ) async throws {
        try await backend.run(
            migrating: TestResultMigrations.group,
            inMemory: { InMemoryNHSResultRepository() as any NHSResultRepository },
            postgres: { PostgresNHSResultRepository(client: $0.client, logger: $0.logger) as any NHSResultRepository },
            body
        )
    }

    private static let now = Date(timeIntervalSince1970: 1_795_000_000)
    private static let later = now.addingTimeInterval(NHSLifetime.token)
    private static let positive = NHSLabResult(
        testEndDate: NHSTestEndDate(day: "2026-11-20")!,
        testResult: .positive,
        testKit: .rapidResult
    )

    /// A 64-digit hex hash made of `digit`.
    private static func hash(_ digit: Character) -> String { String(repeating: digit, count: 64) }

    @Test(
        "an order is pending under its first hash; a taken hash, current or under another key, is a collision",
        arguments: RepositoryBackend.allCases
    )
    func orders(_ backend: RepositoryBackend) async throws {
        try await self.withResults(backend) { results in
            let (a, b, c) = (Self.hash("a"), Self.hash("b"), Self.hash("c"))
            let created = try await results.createOrder(
                ctaHash: a,
                otherHashes: [b],
                now: Self.now,
                expiresAt: Self.later
            )
            #expect(created)
            #expect(
                try await results.find(candidates: [b, a], now: Self.now)
                    == NHSStoredResult(ctaHash: a, status: .pending)
            )
            #expect(try await results.find(candidates: [b], now: Self.now) == nil, "only the first hash is stored")
            #expect(!(try await results.createOrder(ctaHash: a, otherHashes: [], now: Self.now, expiresAt: Self.later)))
            #expect(
                !(try await results.createOrder(ctaHash: c, otherHashes: [a], now: Self.now, expiresAt: Self.later))
            )
            #expect(
                !(try await results.createAvailable(
                    ctaHash: c,
                    otherHashes: [a],
                    result: Self.positive,
                    now: Self.now,
                    expiresAt: Self.later
                ))
            )
            #expect(try await results.find(candidates: [c], now: Self.now) == nil)
        }
    }

    @Test(
        "a lab's upload makes a pending order available once; no order or an expired one is noOrder",
        arguments: RepositoryBackend.allCases
    )
    func uploads(_ backend: RepositoryBackend) async throws {
        try await self.withResults(backend) { results in
            let (a, b) = (Self.hash("a"), Self.hash("b"))
            _ = try await results.createOrder(ctaHash: a, otherHashes: [], now: Self.now, expiresAt: Self.later)
            let outcomes = try await withThrowingTaskGroup(of: NHSUploadOutcome.self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        try await results.upload(candidates: [b, a], result: Self.positive, now: Self.now)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .stored }.count == 1)
            #expect(outcomes.filter { $0 == .alreadyAvailable }.count == 9)
            let stored = try #require(try await results.find(candidates: [a], now: Self.now))
            #expect(stored.status == .available)
            #expect(stored.testResult == .positive && stored.testKit == .rapidResult)
            #expect(stored.testEndDate?.day == "2026-11-20")
            #expect(try await results.upload(candidates: [b], result: Self.positive, now: Self.now) == .noOrder)
            _ = try await results.createOrder(ctaHash: b, otherHashes: [], now: Self.now, expiresAt: Self.later)
            #expect(try await results.upload(candidates: [b], result: Self.positive, now: Self.later) == .noOrder)
        }
    }

    @Test(
        "bulk results are stored all or none: a taken hash, a hash twice or a taken other-key hash stores nothing",
        arguments: RepositoryBackend.allCases
    )
    func bulk(_ backend: RepositoryBackend) async throws {
        try await self.withResults(backend) { results in
            let (a, b, c, d) = (Self.hash("a"), Self.hash("b"), Self.hash("c"), Self.hash("d"))
            try await results.createAvailable(
                [(a, Self.positive), (b, Self.positive)],
                otherHashes: [],
                now: Self.now,
                expiresAt: Self.later
            )
            #expect(try await results.find(candidates: [b], now: Self.now)?.status == .available)
            for (entries, others) in [([c, a], [String]()), ([c, c], []), ([c, d], [b])] {
                await #expect(throws: NHSCollision.self) {
                    try await results.createAvailable(
                        entries.map { ($0, Self.positive) },
                        otherHashes: others,
                        now: Self.now,
                        expiresAt: Self.later
                    )
                }
                #expect(try await results.find(candidates: [c, d], now: Self.now) == nil)
            }
        }
    }

    @Test(
        "an expired row is found by no read, keeps its hash taken, and is deleted by deleteExpired",
        arguments: RepositoryBackend.allCases
    )
    func expiry(_ backend: RepositoryBackend) async throws {
        try await self.withResults(backend) { results in
            let (a, b) = (Self.hash("a"), Self.hash("b"))
            _ = try await results.createOrder(ctaHash: a, otherHashes: [], now: Self.now, expiresAt: Self.later)
            _ = try await results.createOrder(
                ctaHash: b,
                otherHashes: [],
                now: Self.now,
                expiresAt: Self.later.addingTimeInterval(1)
            )
            #expect(try await results.find(candidates: [a], now: Self.later) == nil)
            #expect(
                !(try await results.createOrder(ctaHash: a, otherHashes: [], now: Self.later, expiresAt: Self.later))
            )
            #expect(try await results.deleteExpired(now: Self.later) == 1)
            #expect(try await results.deleteExpired(now: Self.later) == 0)
            #expect(try await results.find(candidates: [b], now: Self.later) != nil)
            #expect(try await results.createOrder(ctaHash: a, otherHashes: [], now: Self.later, expiresAt: Self.later))
        }
    }
}
