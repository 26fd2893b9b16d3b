// The in-memory NHS tables of verification-service keep the rules of the PostgreSQL ones: orders and submission
// tokens, isolation payment tokens and circuit-breaker approvals, every scenario over both.

import ENTestSupport
import Foundation
import Testing

@testable import VerificationService

@Suite("NHS tables of verification-service contract (PostgreSQL and in memory)")
struct NHSRepositoryContractTests {
    private static let now = Date(timeIntervalSince1970: 1_795_000_000)

    /// A 64-digit hex hash made of `digit`.
    private static func hash(_ digit: Character) -> String { String(repeating: digit, count: 64) }

    private func withOrders(
        _ backend: RepositoryBackend,
        _ body: @Sendable (any NHSOrderRepository) async throws -> Void
    )
        async throws
    {
        try await backend.run(
            migrating: VerificationMigrations.group,
            inMemory: { InMemoryNHSOrderRepository() as any NHSOrderRepository },
            postgres: { PostgresNHSOrderRepository(client: $0.client, logger: $0.logger) as any NHSOrderRepository },
            body
        )
    }

    private func withPayments(
        _ backend: RepositoryBackend,
        _ body: @Sendable (any NHSIsolationPaymentRepository) async throws -> Void
    ) async throws {
        try await backend.run(
            migrating: VerificationMigrations.group,
            inMemory: { InMemoryNHSIsolationPaymentRepository() as any NHSIsolationPaymentRepository },
            postgres: {
                PostgresNHSIsolationPaymentRepository(client: $0.client, logger: $0.logger)
                    as any NHSIsolationPaymentRepository
            },
            body
        )
    }

    private func withBreakers(
        _ backend: RepositoryBackend,
        _ body: @Sendable (any NHSCircuitBreakerRepository) async throws -> Void
    ) async throws {
        try await backend.run(
            migrating: VerificationMigrations.group,
            inMemory: { InMemoryNHSCircuitBreakerRepository() as any NHSCircuitBreakerRepository },
            postgres: {
                PostgresNHSCircuitBreakerRepository(client: $0.client, logger: $0.logger)
                    as any NHSCircuitBreakerRepository
            },
            body
        )
    }

    // MARK: - Orders

    @Test(
        "an order is found by its polling token and CTA hash until it expires; its submission token submits once",
        arguments: RepositoryBackend.allCases
    )
    func orders(_ backend: RepositoryBackend) async throws {
        try await self.withOrders(backend) { orders in
            let (cta, polling, token) = (Self.hash("a"), Self.hash("b"), Self.hash("c"))
            let until = Self.now.addingTimeInterval(NHSOrderLifetime.untilRead)
            try await orders.createOrder(
                ctaHash: cta,
                pollingTokenHash: polling,
                submissionTokenHash: token,
                now: Self.now,
                expiresAt: until
            )
            let order = try #require(try await orders.order(pollingTokenHash: polling, now: Self.now))
            #expect(order.ctaHash == cta)
            #expect(try await orders.order(ctaCandidates: [Self.hash("d"), cta], now: Self.now) == order)
            #expect(try await orders.order(pollingTokenHash: polling, now: until) == nil)
            #expect(try await orders.submittable(tokenHash: token, now: Self.now) == order)
            #expect(
                try await orders.redemption(tokenHash: token)
                    == NHSOrderRedemption(order: order, submitted: false, submittedBy: nil)
            )

            let attempt = UUID()
            let marks = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<10 {
                    group.addTask { try await orders.markSubmitted(orderID: order.id, now: Self.now, by: attempt) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(marks.filter { $0 }.count == 1)
            #expect(try await orders.submittable(tokenHash: token, now: Self.now) == nil)
            #expect(
                try await orders.redemption(tokenHash: token)
                    == NHSOrderRedemption(order: order, submitted: true, submittedBy: attempt)
            )
            #expect(try await orders.redemption(tokenHash: Self.hash("e")) == nil)
        }
    }

    @Test(
        "a CTA token is exchanged twice at most; an exchange creates the order of a token-API result",
        arguments: RepositoryBackend.allCases
    )
    func exchanges(_ backend: RepositoryBackend) async throws {
        try await self.withOrders(backend) { orders in
            let cta = Self.hash("a")
            #expect(
                try await orders.exchange(
                    ctaHash: cta,
                    submissionTokenHash: Self.hash("1"),
                    positive: true,
                    now: Self.now
                )
            )
            let order = try #require(try await orders.order(ctaCandidates: [cta], now: Self.now))
            #expect(
                try await orders.exchange(
                    ctaHash: cta,
                    submissionTokenHash: Self.hash("2"),
                    positive: true,
                    now: Self.now
                )
            )
            #expect(
                !(try await orders.exchange(
                    ctaHash: cta,
                    submissionTokenHash: Self.hash("3"),
                    positive: true,
                    now: Self.now
                ))
            )
            #expect(try await orders.submittable(tokenHash: Self.hash("1"), now: Self.now) == order)
            #expect(try await orders.submittable(tokenHash: Self.hash("2"), now: Self.now) == order)
            #expect(try await orders.redemption(tokenHash: Self.hash("3")) == nil)
            // A positive result's submission tokens outlive the order: 4 days against 4 hours.
            let later = Self.now.addingTimeInterval(NHSOrderLifetime.afterRead)
            #expect(try await orders.order(ctaCandidates: [cta], now: later) == nil)
            #expect(try await orders.submittable(tokenHash: Self.hash("1"), now: later) == order)
            #expect(
                try await orders.submittable(
                    tokenHash: Self.hash("1"),
                    now: Self.now.addingTimeInterval(NHSOrderLifetime.submissionAfterRead)
                ) == nil
            )

            let negative = Self.hash("b")
            #expect(
                try await orders.exchange(
                    ctaHash: negative,
                    submissionTokenHash: Self.hash("4"),
                    positive: false,
                    now: Self.now
                )
            )
            #expect(try await orders.submittable(tokenHash: Self.hash("4"), now: later) == nil)
        }
    }

    @Test(
        "a read extends the order 4 hours (its tokens 4 days when positive); retention waits for the result to be gone",
        arguments: RepositoryBackend.allCases
    )
    func readAndRetention(_ backend: RepositoryBackend) async throws {
        try await self.withOrders(backend) { orders in
            let (cta, polling, token) = (Self.hash("a"), Self.hash("b"), Self.hash("c"))
            try await orders.createOrder(
                ctaHash: cta,
                pollingTokenHash: polling,
                submissionTokenHash: token,
                now: Self.now,
                expiresAt: Self.now.addingTimeInterval(NHSOrderLifetime.untilRead)
            )
            let order = try #require(try await orders.order(pollingTokenHash: polling, now: Self.now))
            let read = Self.now.addingTimeInterval(3600)
            try await orders.markRead(orderID: order.id, positive: true, now: read)
            let orderEnd = read.addingTimeInterval(NHSOrderLifetime.afterRead)
            #expect(try await orders.order(pollingTokenHash: polling, now: orderEnd.addingTimeInterval(-1)) == order)
            #expect(try await orders.order(pollingTokenHash: polling, now: orderEnd) == nil)
            let tokenEnd = read.addingTimeInterval(NHSOrderLifetime.submissionAfterRead)
            #expect(try await orders.submittable(tokenHash: token, now: tokenEnd.addingTimeInterval(-1)) == order)
            #expect(try await orders.deleteExpired(now: tokenEnd) == 0, "kept while the result may exist")
            #expect(
                !(try await orders.exchange(
                    ctaHash: cta,
                    submissionTokenHash: Self.hash("d"),
                    positive: true,
                    now: tokenEnd
                )),
                "an expired order refuses an exchange"
            )
            let gone = Self.now.addingTimeInterval(NHSOrderLifetime.untilRead)
            #expect(try await orders.deleteExpired(now: gone) == 1)
            #expect(try await orders.redemption(tokenHash: token) == nil, "its tokens went with it")
        }
    }

    // MARK: - Isolation payment tokens

    @Test(
        "a token is created, unlocked once, verified while valid and consumed once, also in parallel",
        arguments: RepositoryBackend.allCases
    )
    func payments(_ backend: RepositoryBackend) async throws {
        try await self.withPayments(backend) { payments in
            let token = Self.hash("a")
            let (encounter, end) = (Self.now.addingTimeInterval(-86_400), Self.now.addingTimeInterval(10 * 86_400))
            #expect(
                try await payments.create(tokenHash: token, now: Self.now, expiresAt: Self.now.addingTimeInterval(3600))
            )
            #expect(!(try await payments.create(tokenHash: token, now: Self.now, expiresAt: Self.now)))
            #expect(try await payments.verify(tokenHash: token, now: Self.now) == nil, "not unlocked")
            let later = Self.now.addingTimeInterval(60)
            #expect(try await payments.unlock(tokenHash: token, encounter: encounter, isolationEnd: end, now: later))
            #expect(!(try await payments.unlock(tokenHash: token, encounter: encounter, isolationEnd: end, now: later)))
            let claim = NHSIsolationClaim(
                riskyEncounterDate: encounter,
                isolationPeriodEndDate: end,
                createdAt: Self.now,
                updatedAt: later
            )
            // Unlocked, the token lives until the isolation ends, past its creation lifetime.
            #expect(try await payments.verify(tokenHash: token, now: Self.now.addingTimeInterval(7200)) == claim)
            let consumed = try await withThrowingTaskGroup(of: NHSIsolationClaim?.self) { group in
                for _ in 0..<10 { group.addTask { try await payments.consume(tokenHash: token, now: later) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(consumed.compactMap { $0 } == [claim])
            #expect(try await payments.verify(tokenHash: token, now: later) == nil)
        }
    }

    @Test(
        "an unlock after the creation lifetime fails; deleteExpired removes expired tokens",
        arguments: RepositoryBackend.allCases
    )
    func paymentExpiry(_ backend: RepositoryBackend) async throws {
        try await self.withPayments(backend) { payments in
            let (stale, valid) = (Self.hash("a"), Self.hash("b"))
            let hour = Self.now.addingTimeInterval(3600)
            _ = try await payments.create(tokenHash: stale, now: Self.now, expiresAt: hour)
            _ = try await payments.create(tokenHash: valid, now: Self.now, expiresAt: hour)
            #expect(
                try await payments.unlock(
                    tokenHash: valid,
                    encounter: Self.now,
                    isolationEnd: hour.addingTimeInterval(60),
                    now: Self.now
                )
            )
            #expect(!(try await payments.unlock(tokenHash: stale, encounter: Self.now, isolationEnd: hour, now: hour)))
            #expect(try await payments.deleteExpired(now: hour) == 1)
            #expect(try await payments.consume(tokenHash: valid, now: hour) != nil)
        }
    }

    // MARK: - Circuit breakers

    @Test(
        "requests are counted per hour and decided by the switch and the rule; an officer's resolution answers the held",
        arguments: RepositoryBackend.allCases
    )
    func breakers(_ backend: RepositoryBackend) async throws {
        try await self.withBreakers(backend) { breakers in
            let rule = NHSCircuitBreakerRule(multiple: 2, minimum: 2)
            let until = Self.now.addingTimeInterval(86_400)
            var answers: [NHSApproval] = []
            for digit in ["1", "2", "3"] as [Character] {
                let decided = try await breakers.request(
                    kind: .venue,
                    tokenHash: Self.hash(digit),
                    rule: rule,
                    now: Self.now,
                    expiresAt: until
                )
                answers.append(decided.approval)
            }
            #expect(answers == [.yes, .yes, .pending], "the third exceeds the minimum of 2")
            let counts = try await breakers.counts(kind: .venue, now: Self.now)
            #expect(counts.lastHour == 3 && counts.sameHour == Array(repeating: 0, count: 7) && counts.mode == .yes)
            #expect(try await breakers.counts(kind: .exposureNotification, now: Self.now).lastHour == 0)
            #expect(try await breakers.approval(tokenHash: Self.hash("3"), kind: .venue, now: Self.now) == .pending)
            #expect(
                try await breakers.approval(tokenHash: Self.hash("3"), kind: .exposureNotification, now: Self.now)
                    == nil
            )
            let pending = try await breakers.pending(kind: .venue, now: Self.now)
            #expect(pending.pending == 1 && pending.byRule == 1 && pending.oldest == Self.now)

            let quiet = Self.now.addingTimeInterval(3600)
            #expect(
                try await breakers.resolvePending(kind: .venue, approval: .yes, now: Self.now, quietUntil: quiet) == 1
            )
            #expect(try await breakers.approval(tokenHash: Self.hash("3"), kind: .venue, now: Self.now) == .yes)
            let released = try await breakers.request(
                kind: .venue,
                tokenHash: Self.hash("4"),
                rule: rule,
                now: Self.now,
                expiresAt: until
            )
            #expect(released.approval == .yes && released.lastHour == 4, "the release quiets the rule")

            try await breakers.setMode(.no, kind: .venue, now: Self.now)
            let refused = try await breakers.request(
                kind: .venue,
                tokenHash: Self.hash("5"),
                rule: rule,
                now: Self.now,
                expiresAt: until
            )
            #expect(refused.approval == .no && !refused.byRule)
            #expect(try await breakers.counts(kind: .venue, now: Self.now).mode == .no)
            #expect(try await breakers.counts(kind: .venue, now: Self.now.addingTimeInterval(86_400)).sameHour[0] == 5)
            #expect(try await breakers.deleteExpired(now: until) == 5)
            #expect(try await breakers.approval(tokenHash: Self.hash("1"), kind: .venue, now: Self.now) == nil)
        }
    }
}
